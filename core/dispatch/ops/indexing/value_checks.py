"""Remembered value checks: a tensor whose values passed a check is not read again while it is unchanged.

Checks that read tensor values (class targets in range, indices in range) cost a device round trip on
every call. The tensors they read are often the same from call to call: the targets of a training loop's
batch, read by the loss and again by its backward, or an index reused at every step. A tensor still holds
the checked values while it is the same object with the same storage and the same version: every in-place
write moves the version counter, which views share.
"""
from __future__ import annotations

import weakref

MISSING = object()


class CheckedValues:
    """What checks concluded about recently checked tensors (at most ``size``; the oldest go first)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.entries: dict[int, tuple] = {}  # id(tensor) -> (weak reference, storage, version, key, result)

    def recall(self, tensor, key):
        """The result remembered for ``tensor`` under ``key``, or ``MISSING``."""
        entry = self.entries.get(id(tensor))
        if (entry is not None and entry[0]() is tensor and entry[1] is tensor._data
                and entry[2] == tensor._version[0] and entry[3] == key):
            return entry[4]
        return MISSING

    def remember(self, tensor, key, result=None) -> None:
        entries = self.entries
        if len(entries) >= self.size and id(tensor) not in entries:
            del entries[next(iter(entries))]
        entries[id(tensor)] = (weakref.ref(tensor), tensor._data, tensor._version[0], key, result)


__all__ = ["CheckedValues", "MISSING"]
