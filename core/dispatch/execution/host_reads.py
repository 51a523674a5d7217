"""The one door through which core reads tensor values to the host, counted per device type.

On an accelerator every such read (``item``, ``tolist``, ``bool``, ``numpy``, printing, a copy to another
device type, a value check judged at once) waits for the device's queue to drain: it ends the overlap of
host and device and forbids graph capture. Counting the reads, also on the cpu backend where they are
free, lets a test assert that a training step makes none (``tests/test_host_syncs.py``). A read first
judges the value checks pending on its device (``deferred_checks``), as a synchronisation would.

``counting()`` measures a region: ``with host_reads.counting() as reads: step(); assert reads.total == 0``.
"""
from __future__ import annotations

from typing import Iterator
from contextlib import contextmanager

from ..contract import registry
from . import deferred_checks

_counts: dict[str, int] = {}


def read(native, device):
    """``native`` (on ``device``) as a NumPy array, after the checks pending there: the counted host read."""
    if deferred_checks._pending:
        deferred_checks.settle(device.type, device.index)
    _counts[device.type] = _counts.get(device.type, 0) + 1
    return registry.get_backend(device.type).to_numpy(native)


def count(device_type: str) -> None:
    """Count a synchronising read made outside ``read`` (a forced judgement of pending checks)."""
    _counts[device_type] = _counts.get(device_type, 0) + 1


def counts() -> dict[str, int]:
    """Host reads so far, by device type."""
    return dict(_counts)


def synchronize(backend, index: int | None) -> None:
    """``backend.synchronize(index)`` after judging the checks pending there: what every
    ``synchronize()`` of Ember's calls, so that a deferred error surfaces at the latest there."""
    backend.synchronize(index)
    if deferred_checks._pending:
        deferred_checks.settle(backend.device_type, index)


class HostReads:
    """The reads counted in a ``counting()`` region, by device type (``by_type``) and in all (``total``)."""

    def __init__(self) -> None:
        self.by_type: dict[str, int] = {}

    @property
    def total(self) -> int:
        return sum(self.by_type.values())

    def __repr__(self) -> str:
        return f"HostReads({self.by_type})"


@contextmanager
def counting() -> Iterator[HostReads]:
    """The host reads made inside the ``with`` block (the result is filled in when the block ends)."""
    before = counts()
    result = HostReads()
    try:
        yield result
    finally:
        result.by_type = {t: n - before.get(t, 0) for t, n in _counts.items() if n != before.get(t, 0)}


__all__ = ["read", "count", "counts", "synchronize", "counting", "HostReads"]
