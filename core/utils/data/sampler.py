"""Samplers: which dataset indices a DataLoader fetches, and in which order.

All randomness comes from Ember's generators, so ``generator=`` (or ``ember.manual_seed``)
makes an epoch's order reproducible on any backend.
"""
from __future__ import annotations

import itertools
from typing import Generic, Iterator, Sequence, TypeVar

from ...creation import as_tensor
from ...dispatch.schema.dtypes import float64, int64
from ...dispatch.ops import F
from ...functions import cat, rand, randint, where, zeros
from ...random import Generator

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

_SEED_BOUND = 2 ** 63 - 1
_CHUNK = 1024  # indices drawn per randint call when sampling with replacement


def _draw_seed(generator=None) -> int:
    """A 63-bit seed from ``generator`` (default: Ember's default generator)."""
    return int(randint(0, _SEED_BOUND, (), generator=generator).item())


def _is_positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class Sampler(Generic[T_co]):
    """Base class: an iterable of indices (or of index batches), usually with a ``__len__``.

    Generic so that ``Sampler[int]`` works in annotations and base lists, as in PyTorch.
    ``data_source`` is accepted for compatibility and ignored. There is no default ``__len__``:
    a DataLoader's ``len()`` should fail loudly when the sampler cannot know its length.
    """

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices, or ``num_samples`` draws with replacement.

    Without a ``generator`` each epoch seeds a private generator with one draw from Ember's
    default generator: ``ember.manual_seed`` then fixes every epoch's order, and the default
    generator advances by one draw per epoch however far the epoch is consumed.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not _is_positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(_draw_seed())
        count = self.num_samples
        if self.replacement:
            while count > 0:
                size = min(count, _CHUNK)
                yield from randint(0, n, (size,), generator=generator).tolist()
                count -= size
        else:
            for _ in range(count // n):
                yield from F.randperm(n, generator=generator).tolist()
            if count % n:
                yield from F.randperm(n, generator=generator).tolist()[:count % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a fresh one each epoch)."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in F.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, index ``i`` drawn with probability ∝ ``weights[i]``.

    Weights need not sum to one. Without replacement each index appears at most once, so
    ``num_samples`` may not exceed the number of positive weights.
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = as_tensor(weights, dtype=float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from _weighted_draw(self.weights, self.num_samples, self.replacement, self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


def _weighted_draw(weights, count: int, replacement: bool, generator):
    """Indices drawn in proportion to ``weights`` (1-D float64), written in Ember ops."""
    if not bool(F.isfinite(weights).all()) or bool((weights < 0).any()):
        raise RuntimeError("WeightedRandomSampler: weights must be finite and non-negative")
    positive = weights > 0
    available = int(positive.sum())
    if available == 0:
        raise RuntimeError("WeightedRandomSampler: weights sum to zero, there is nothing to sample")
    if replacement:
        return _inverse_cdf_draw(weights, positive, count, generator)
    if count > available:
        raise RuntimeError(f"WeightedRandomSampler: cannot draw {count} samples without replacement from "
                           f"{available} indices of positive weight")
    # Exponential races (Efraimidis-Spirakis): index i finishes at Exp(1) / w_i; the order in
    # which indices finish is the order of successive draws without replacement.
    u = rand(weights.shape[0], dtype=float64, generator=generator)
    finish = F.neg(F.log1p(F.neg(u)))
    safe = where(positive, weights, F.ones_like(weights))
    keys = where(positive, finish / safe, F.full_like(weights, float("inf")))
    return F.topk(keys, count, largest=False, sorted=True)[1]


def _inverse_cdf_draw(weights, positive, count: int, generator):
    """``count`` draws with replacement: for each uniform ``u``, how many CDF steps lie at or below it.

    That count is a binary search per draw; without a searchsorted op we get it from one stable
    sort of the CDF merged with the draws (CDF entries first, so a tie counts the step).
    """
    m = weights.shape[0]
    cdf = F.cumsum(weights, 0)
    u = rand(count, dtype=float64, generator=generator) * cdf[-1]
    order = F.argsort(cat([cdf, u]), stable=True)
    from_cdf = order < m
    steps_below = F.cumsum(from_cdf.to(int64), 0)
    is_draw = F.logical_not(from_cdf)
    picks = zeros(count, dtype=int64).scatter(0, order[is_draw] - m, steps_below[is_draw])
    # u can round up to the total; never let that land on a trailing zero-weight index.
    last_positive = int(F.nonzero(positive)[-1, 0])
    return F.clamp(picks, max=last_positive)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size``; ``drop_last`` drops a short tail."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        indices = iter(self.sampler)
        while True:
            batch = list(itertools.islice(indices, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
