"""``ember.utils.data``: datasets, samplers, collation and the ``DataLoader``, with PyTorch's API.

Modules: ``dataset`` (map-style and iterable datasets, ``random_split``), ``sampler``,
``collate``, ``fetch`` (index -> batch), ``dataloader`` (the loader and its in-process
iterator), ``multiprocess`` and ``worker`` (the two sides of worker-process loading).
"""
from .collate import collate, default_collate, default_collate_fn_map, default_convert
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "WorkerInfo", "collate", "default_collate", "default_collate_fn_map",
           "default_convert", "get_worker_info", "random_split"]
