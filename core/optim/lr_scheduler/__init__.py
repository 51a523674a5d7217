"""``ember.optim.lr_scheduler``: PyTorch's learning-rate schedulers, one module per family."""
from .base import LRScheduler, _LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR, OneCycleLR
from .multiplicative import (ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR,
                             PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"]
