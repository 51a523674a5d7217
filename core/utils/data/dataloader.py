"""``DataLoader``: a sampler, a dataset and a collate function, iterated in this process or in workers."""
from __future__ import annotations

import math
import multiprocessing
import os
import warnings
from typing import Generic, TypeVar

from .base_iter import BaseIter
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .fetch import make_fetcher
from .multiprocess import MultiProcessIter
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

T_co = TypeVar("T_co", covariant=True)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: endless placeholders, one per sample to pull."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


class DataLoader(Generic[T_co]):
    """Iterate a dataset in batches: map-style through a sampler, or iterable-style as a stream.

    Arguments, defaults and validation follow ``torch.utils.data.DataLoader``. Notes:

    * ``num_workers > 0`` loads in worker processes (fork where available, else the
      platform's default; pass ``multiprocessing_context="spawn"`` to force spawn, in which
      case the dataset, ``collate_fn`` and ``worker_init_fn`` must pickle). Batches come back
      in sampler order (``in_order=False`` takes them as they finish), with
      ``prefetch_factor`` batches (default 2; 0 acts as 1) in flight per worker.
    * ``pin_memory`` (and ``pin_memory_device``) are accepted and are no-ops: the backend
      contract has no page-locked host memory yet, so batches stay ordinary CPU tensors.
    * ``timeout`` (seconds, 0 = wait forever) bounds the wait for each batch from a worker; a
      worker that raises, or dies, makes iteration raise promptly instead of hanging.
    * With the default collate function, a ``TensorDataset`` (also behind ``Subset``s, e.g.
      from ``random_split``) is batched by one ``index_select`` per tensor instead of
      indexing and stacking sample by sample: the same batch, much faster.
    * ``generator`` drives the default ``RandomSampler`` and the workers' base seed; worker
      ``k`` seeds Ember, ``random`` and NumPy with ``base_seed + k``.
    """

    __initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._iterable_len = None  # what len(self) last reported for an IterableDataset
        self.__initialized = True
        self.check_worker_number_rationality()

    # -- configuration -----------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, name, value) -> None:
        # Changing these after construction would desynchronise the sampler from the loader.
        if self.__initialized and name in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than this process may run on CPUs."""
        if self.num_workers <= 0:
            return
        cpus = _cpu_count()
        if cpus is None or self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total, more "
                          f"than the {cpus} CPUs this process may use; loading may be slower than with fewer "
                          f"workers.", stacklevel=2)

    # -- iteration ---------------------------------------------------------------------------
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            self._iterable_len = length
            return length
        return len(self._index_sampler)


class _SingleProcessIter(BaseIter):
    """``num_workers=0``: fetch and collate in this process, one batch per ``next``."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = make_fetcher(self._dataset, self._is_iterable, self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)
