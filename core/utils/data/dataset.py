"""Datasets: the map-style and iterable-style protocols, and the wrappers that combine them.

A map-style dataset answers ``dataset[i]`` and ``len(dataset)``; the DataLoader asks a
sampler which ``i`` to fetch. An iterable-style dataset is a stream: it yields samples
itself, and with several workers it shards itself using ``get_worker_info()``.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, Sequence, TypeVar

from ...dispatch.ops import F
from ...random import default_generator
from ...tensor import Tensor

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset", "ChainDataset",
           "random_split"]


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` and usually ``__len__``.

    Generic only so that annotations like ``Dataset[int]`` work, as in PyTorch.
    There is deliberately no default ``__len__``: a sampler must not silently see length
    zero. A subclass may also implement ``__getitems__(indices) -> list of samples`` to fetch a
    whole batch at once; the DataLoader calls it instead of ``__getitem__`` when present.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement ``__iter__``.

    Every DataLoader worker gets its own copy and iterates it from the start, so a dataset
    that should not repeat data across workers splits itself with ``get_worker_info()``.
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} is an IterableDataset and cannot be indexed")

    def __add__(self, other: "Dataset") -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension: ``(x[i], y[i])``."""

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        if any(not isinstance(t, Tensor) or t.ndim == 0 for t in tensors):
            raise TypeError("TensorDataset takes tensors of at least one dimension")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            # AssertionError, as PyTorch raises here.
            raise AssertionError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Datasets of one length read side by side: ``StackDataset(x, y)[i]`` is ``(x[i], y[i])``,
    ``StackDataset(image=x, label=y)[i]`` is ``{"image": x[i], "label": y[i]}``."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets either by position (samples are tuples) or by "
                             "keyword (samples are dicts), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        self._datasets = args if args else kwargs
        datasets = args if args else tuple(kwargs.values())
        lengths = [len(d) for d in datasets]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"StackDataset: size mismatch between datasets: their lengths are {lengths}")
        self._length = lengths[0]

    @property
    def datasets(self):
        return self._datasets

    def __getitem__(self, index):
        if isinstance(self._datasets, dict):
            return {key: dataset[index] for key, dataset in self._datasets.items()}
        return tuple(dataset[index] for dataset in self._datasets)

    def __getitems__(self, indices: list):
        """A batch of samples, fetched from each dataset at once where it can (its own ``__getitems__``)."""
        named = self._datasets if isinstance(self._datasets, dict) else dict(enumerate(self._datasets))
        columns = {}
        for key, dataset in named.items():
            fetch = getattr(dataset, "__getitems__", None)
            column = fetch(indices) if fetch is not None else [dataset[i] for i in indices]
            if len(column) != len(indices):
                raise ValueError(f"StackDataset: nested dataset {key!r} returned {len(column)} samples for "
                                 f"{len(indices)} indices")
            columns[key] = column
        if isinstance(self._datasets, dict):
            return [{key: columns[key][j] for key in named} for j in range(len(indices))]
        return [tuple(columns[key][j] for key in named) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        # Pass a whole batch on, so a parent with a batched fetch keeps it behind a Subset.
        mapped = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(mapped)
        return [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets end to end; ``cumulative_sizes[k]`` is where dataset k ends."""

    @staticmethod
    def cumsum(sequence) -> list:
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another (what ``iterable + iterable`` builds)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def random_split(dataset: Dataset, lengths: Sequence, generator=None) -> list:
    """Split ``dataset`` into non-overlapping random ``Subset``s of the given lengths.

    ``lengths`` may be fractions summing to 1: each split gets ``floor(frac * len)`` samples and
    the remainder is dealt out one at a time from the first split on, as PyTorch does.
    ``generator`` (default: Ember's default generator) fixes the permutation.
    """
    lengths = list(lengths)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        n = len(dataset)
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
        lengths = counts
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    generator = default_generator if generator is None else generator
    order = F.randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
