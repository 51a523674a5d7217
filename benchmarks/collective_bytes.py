"""Bytes a rank hands to each collective, counted by wrapping ``ember.distributed``'s public functions.

The callers reach the collectives through two names: FSDP through ``ember.distributed.collectives.<name>``,
DDP's reducer and ``broadcast_coalesced`` through ``ember.distributed.<name>``; both are module attributes
looked up at call time, so patching both (and only while the context is open) sees every call. A call
counts the bytes of the tensor the rank contributes (its input), whatever the collective sends on the wire.
"""
from __future__ import annotations

import inspect
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator

# collective -> the parameter holding the tensor this rank contributes
CONTRIBUTED = {"all_reduce": "tensor", "broadcast": "tensor", "reduce": "tensor", "all_gather": "tensor",
               "all_gather_into_tensor": "input_tensor", "reduce_scatter_tensor": "input", "gather": "tensor",
               "send": "tensor", "isend": "tensor"}


class CollectiveBytes:
    """Per collective: the bytes this rank contributed and the number of calls."""

    def __init__(self) -> None:
        self.bytes: Counter = Counter()
        self.calls: Counter = Counter()

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {name: {"bytes": self.bytes[name], "calls": self.calls[name]} for name in sorted(self.calls)}


@contextmanager
def counting_collectives() -> Iterator[CollectiveBytes]:
    """Count the collectives called inside the ``with`` block, then put the original functions back."""
    import ember.distributed as dist
    from ember.distributed import collectives

    counts = CollectiveBytes()
    originals = [(module, name, getattr(module, name)) for module in (dist, collectives) for name in CONTRIBUTED]
    for module, name, original in originals:
        setattr(module, name, _counted(original, name, counts))
    try:
        yield counts
    finally:
        for module, name, original in originals:
            setattr(module, name, original)


def _counted(original: Callable, name: str, counts: CollectiveBytes) -> Callable:
    signature = inspect.signature(original)
    contributed = CONTRIBUTED[name]

    def collective(*args, **kwargs):
        tensor = signature.bind(*args, **kwargs).arguments[contributed]
        counts.bytes[name] += tensor.numel() * tensor.element_size()
        counts.calls[name] += 1
        return original(*args, **kwargs)
    return collective
