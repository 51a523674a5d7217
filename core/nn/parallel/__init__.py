"""``ember.nn.parallel``: data parallelism across processes (``DistributedDataParallel``).

The collectives come from ``ember.distributed`` (MPI starts only when a process group is initialised).
"""
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
