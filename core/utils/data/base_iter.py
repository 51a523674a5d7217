"""What the single-process and the multi-process DataLoader iterators share."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .sampler import _draw_seed

if TYPE_CHECKING:
    from .dataloader import DataLoader


class BaseIter:
    """What both iterators share: the sampler iterator, the base seed, the yield count."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._num_workers = loader.num_workers
        self._base_seed = _draw_seed(loader.generator)
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader: DataLoader) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        expected = self._loader._iterable_len
        if self._is_iterable and expected is not None and self._num_yielded > expected:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {expected} batches "
                          f"(len(dataloader)), but {self._num_yielded} have been fetched.")
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)
