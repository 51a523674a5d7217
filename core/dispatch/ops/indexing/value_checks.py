"""Checks of tensor values (indices in range, class targets valid) without a host read on accelerators.

A check needs the smallest and largest value of a tensor. ``check_extremes`` computes both on the tensor's
device (two small reductions) and hands them, with a verdict that turns them into the op's usual error, to
``ember.dispatch.execution.deferred_checks``: judged at once where the backend's memory is the host's (cpu:
errors stay immediate), else at the device's next synchronisation (a host read, ``synchronize()``), as
PyTorch's device asserts. So an eager step and a compiled program's replay (whose checked calls run
through the dispatcher) make no host reads for them.

Remembered checks: the tensors checked are often the same from call to call (the targets a loss reads
and its backward reads again). A tensor still holds the checked values while it is the same object with
the same storage and the same version (every in-place write moves the version counter, which views share),
so ``CheckedValues`` skips a second check of it; a check still pending counts as made, since its failure
will be raised anyway.
"""
from __future__ import annotations

import weakref
from typing import Callable

from ...contract import registry
from ...execution import deferred_checks, links
from ..namespace import F

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


class vouched:
    """``with vouched(): F.gather(x, d, index)``: the caller made ``index`` valid itself (a loss's checked targets
    with the ignored ones pointed at class 0), so the index checks of the calls inside are skipped: a check
    that cannot fail would cost two reductions (and, on an accelerator, two reads at the next sync)."""
    depth = 0

    def __enter__(self) -> None:
        vouched.depth += 1

    def __exit__(self, *exc) -> None:
        vouched.depth -= 1


def defers(tensor) -> bool:
    """Whether checks of ``tensor``'s values wait for its device's next synchronisation: a caller that would
    branch on the values (wrap negative indices only if there are any) must then take the branch that is
    right for every value."""
    return registry.get_backend(tensor._device.type).defers_value_checks


def bounded(index, size: int):
    """``index`` clamped into 0..size-1 where the device defers its checks: a bad index is reported at the next
    synchronisation, and meanwhile the kernel must not reach outside the tensor. ``index`` itself elsewhere."""
    return F.clamp(index, 0, size - 1) if defers(index) else index


def extremes_now(tensor) -> tuple[int | float, int | float]:
    """(smallest, largest) of a non-empty tensor, read at once, for callers that use the values themselves.
    On a host-memory backend the read is no synchronisation and is not counted; elsewhere it is a host read."""
    extremes = (F.amin(tensor), F.amax(tensor))
    if defers(tensor):
        return tuple(t.item() for t in extremes)
    return tuple(deferred_checks.numbers(extremes))


def check_extremes(tensor, verdict: Callable[[int | float, int | float], "Exception | None"],
                   ignore: int | None = None) -> None:
    """Raise ``verdict(smallest, largest)`` of the (non-empty) ``tensor``'s values when it is an error: now on
    a host-memory backend, else at the device's next synchronisation. Elements equal to ``ignore`` count as
    0 (a loss's ignore_index, which may lie anywhere). Under vmap the whole batch is judged (``links.whole``)."""
    tensor = links.whole(tensor)
    extremes = (F.amin(tensor), F.amax(tensor))
    if ignore is not None:
        if not defers(tensor) and verdict(*deferred_checks.numbers(extremes)) is None:
            return  # host memory: the plain extremes passed, no need to mask ignore_index
        tensor = F.where(F.eq(tensor, ignore), 0, tensor)
        extremes = (F.amin(tensor), F.amax(tensor))
    deferred_checks.submit(extremes, verdict)


__all__ = ["CheckedValues", "MISSING", "bounded", "check_extremes", "defers", "extremes_now", "vouched"]
