"""``ember.nn.parallel``: data parallelism across processes (``DistributedDataParallel``).

The collectives come from ``ember.distributed``, imported only when a DDP module is built.
"""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
