"""``DistributedSampler``: each rank of a process group reads its own share of a dataset.

Every rank draws the same permutation (seeded with ``seed + epoch``), pads it by repeating its head
so that it splits evenly (or drops the tail with ``drop_last``), and keeps every ``num_replicas``-th
index starting at its rank: the shares are disjoint and together cover the dataset.
"""
from __future__ import annotations

import math
from typing import Iterator, TypeVar

from ... import distributed as dist
from ...dispatch.ops import F
from ...random import Generator
from .sampler import Sampler

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DistributedSampler"]


def _default_group_size_and_rank(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    """Fill in ``num_replicas`` and ``rank`` from the default process group where not given."""
    if num_replicas is None or rank is None:
        if not dist.is_available():
            raise RuntimeError("DistributedSampler: num_replicas and rank were not given and "
                               "ember.distributed is not available (install ember[distributed])")
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
    return num_replicas, rank


class DistributedSampler(Sampler[T_co]):
    """The indices of rank ``rank`` out of ``num_replicas``; call ``set_epoch`` before each epoch to reshuffle."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        num_replicas, rank = _default_group_size_and_rank(num_replicas, rank)
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas should be a positive integer, got {num_replicas!r}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        size = len(dataset)
        if drop_last and size % num_replicas != 0:
            # the largest share that every rank can fill without repeating an index
            self.num_samples = math.ceil((size - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(size / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        size = len(self.dataset)
        if self.shuffle:
            generator = Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = F.randperm(size, generator=generator).tolist()
        else:
            indices = list(range(size))
        missing = self.total_size - len(indices)
        if missing > 0:  # pad by repeating the permutation from its start (more than once for tiny datasets)
            indices += (indices * math.ceil(missing / len(indices)))[:missing]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch seeds the shuffle: without calling this, every epoch sees the same order."""
        self.epoch = epoch
