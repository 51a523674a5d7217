"""``ember.optim``: optimizers and learning-rate schedulers with PyTorch's names and semantics.

Written only in Ember tensor operations, so every optimizer runs on every backend.
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
