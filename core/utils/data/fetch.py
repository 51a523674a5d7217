"""Fetchers: turn one index (or one batch of indices) from the sampler into collated data.

The same fetchers run in the main process (``num_workers=0``) and in worker processes, so
both paths produce identical batches.
"""
from __future__ import annotations

from ...creation import tensor
from ...dispatch.schema.dtypes import int64
from ...dispatch.ops import F
from .collate import default_collate
from .dataset import Subset, TensorDataset


class MapFetcher:
    """Fetches from a map-style dataset: ``dataset[i]`` per index, or ``__getitems__`` per batch."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.gather = batched_gather(dataset) if auto_collation and collate_fn is default_collate else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.gather is not None and len(index):
            return self.gather(index)
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(samples)


class IterableFetcher:
    """Pulls from an iterable dataset; raises StopIteration once the stream has nothing to give."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.iterator))
            except StopIteration:
                self.ended = True
                raise
        samples = []
        for _ in index:  # the batch sampler's placeholders only say how many samples to take
            try:
                samples.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(index)):
            raise StopIteration
        return self.collate_fn(samples)


def make_fetcher(dataset, is_iterable: bool, auto_collation: bool, collate_fn, drop_last: bool):
    kind = IterableFetcher if is_iterable else MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


def batched_gather(dataset):
    """A function ``indices -> batch`` equal to ``default_collate([dataset[i] for i in indices])``, or None.

    Stacking the rows of a TensorDataset one sample at a time costs a Python-level index per
    sample and a stack of many small tensors; one ``index_select`` per tensor returns the
    same batch (same values, dtypes and shapes, a list as default_collate makes of tuples)
    for a fraction of the cost. Applies only to the library's own TensorDataset (optionally
    behind Subsets) whose item methods are not overridden, so user code is never skipped.
    """
    maps = []
    while type(dataset).__getitem__ is Subset.__getitem__ and \
            getattr(type(dataset), "__getitems__", None) is Subset.__getitems__:
        maps.append(dataset.indices)
        dataset = dataset.dataset
    if not isinstance(dataset, TensorDataset) or type(dataset).__getitem__ is not TensorDataset.__getitem__ \
            or getattr(type(dataset), "__getitems__", None) is not None:
        return None
    tensors = dataset.tensors

    def gather(indices):
        for mapping in maps:  # outermost Subset first
            indices = [mapping[i] for i in indices]
        index = tensor(indices, dtype=int64)
        by_device = {index.device: index}
        batch = []
        for t in tensors:
            if t.device not in by_device:
                by_device[t.device] = index.to(t.device)
            batch.append(F.index_select(t, 0, by_device[t.device]))
        return batch

    return gather
