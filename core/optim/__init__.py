"""``ember.optim``: optimizers and learning-rate schedulers with PyTorch's names and semantics.

Written only in Ember tensor operations, so every optimizer runs on every backend.
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Adafactor", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "LBFGS", "lr_scheduler", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"]
