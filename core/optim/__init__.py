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
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from .swap_in import swap_in_optimizer_params_and_state
from . import swa_utils  # noqa: E402  (imports ember.nn, whose modules it averages)

__all__ = ["Adafactor", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "LBFGS", "lr_scheduler", "Muon", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "swa_utils",
           "swap_in_optimizer_params_and_state"]
