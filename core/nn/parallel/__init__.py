"""``ember.nn.parallel``: data parallelism across processes (``DistributedDataParallel``).

The collectives come from ``ember.distributed``, imported only when a DDP module is built.
"""
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
