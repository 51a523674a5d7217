"""``ember.nn``: modules, parameters, layers, ``functional``, ``init`` and ``utils``, with PyTorch's names.

Everything here is written in Ember tensor ops only, so it runs unchanged on every backend.
"""
from . import common_types, functional, grad, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module
from .parameter import Buffer, Parameter
from .parallel import DataParallel
