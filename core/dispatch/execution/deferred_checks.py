"""Value checks decided on the device and judged at the next synchronisation, as PyTorch's device asserts.

A check of tensor values (indices in range, class targets valid) needs a few numbers computed from the
data: the smallest and largest index, say. Reading them to the host at once would drain the device's queue
on every call. So an op computes them on the device (small reductions, queued like any other work) and
hands them here with a *verdict*: a function of those numbers, as Python numbers, that returns the error
to raise or None.

Where the backend says its values live in host memory (``Backend.defers_value_checks`` False, the cpu
backend), the verdict runs at once: reading costs nothing there and errors stay immediate. Elsewhere the
numbers wait in a per-device queue that is judged (read and the verdicts run, in order) at the next
natural synchronisation of that device: a read of values to the host (``host_reads.read``),
``synchronize()``, or when more than ``LIMIT`` checks are pending. The queue owns the numbers' arrays,
never the checked tensor, so a check is not lost when its tensor dies; at exit what is still pending is
judged, and a failure is printed.

While a device graph is captured (``recording()``), checks are collected instead of queued: capturing runs
no kernel, so their numbers do not exist yet. The graph submits copies of them after each replay
(``resubmit``), so that every replay is judged on its own numbers.
"""
from __future__ import annotations

import atexit
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from ..contract import registry

#: Pending checks per device beyond which the queue is judged at once (one synchronisation).
LIMIT = 256

Verdict = Callable[..., "Exception | None"]
_pending: dict[tuple[str, int | None], list[tuple[tuple, Verdict, object]]] = {}
forced = 0  # judgements forced by LIMIT (each a synchronisation the program did not ask for)
_recording: list | None = None  # checks submitted while a device graph is captured (see ``recording``)

DEFERRED_NOTE = ("(found by a check queued on the device and reported at the next synchronisation: a read of "
                 "values to the host or synchronize(), so the failing call may lie earlier than this line)")


def submit(values: Sequence, verdict: Verdict) -> None:
    """Judge ``verdict(*numbers)`` on the values of the 0-d tensors ``values`` (one device): now where the
    device's memory is the host's, else at that device's next synchronisation."""
    device = values[0]._device
    backend = registry.get_backend(device.type)
    natives = tuple(v._data for v in values)
    if not backend.defers_value_checks:
        error = verdict(*numbers(values))
        if error is not None:
            raise error
        return
    if _recording is not None:
        _recording.append((values, verdict))
        return
    _enqueue(device, natives, verdict, backend)


def _enqueue(device, natives: tuple, verdict: Verdict, backend) -> None:
    queue = _pending.setdefault((device.type, device.index), [])
    queue.append((natives, verdict, backend))
    if len(queue) > LIMIT:
        global forced
        forced += 1
        from . import host_reads  # a synchronisation of its own: counted as a host read
        host_reads.count(device.type)
        settle(device.type, device.index)


@contextmanager
def recording() -> Iterator[list]:
    """Collect the deferred checks submitted inside (as ``(values, verdict)``) instead of queueing them: for a
    device graph being captured, whose kernels have not run yet. Checks judged at once are not collected."""
    global _recording
    outer, _recording = _recording, []
    try:
        yield _recording
    finally:
        _recording = outer


def resubmit(recorded: list) -> None:
    """Queue copies of checks collected by ``recording()``, after a replay has computed their numbers again: a
    copy each, since the next replay overwrites the graph's own buffers before the queue may be judged."""
    for values, verdict in recorded:
        copies = [v.clone() for v in values]
        device = copies[0]._device
        _enqueue(device, tuple(c._data for c in copies), verdict, registry.get_backend(device.type))


def pending(device_type: str | None = None) -> int:
    """How many checks wait to be judged (on ``device_type``, or everywhere)."""
    return sum(len(q) for (t, _), q in _pending.items() if device_type is None or t == device_type)


def settle(device_type: str, index: int | None = None) -> None:
    """Judge the checks pending on ``device_type:index`` (every index of the type when None), oldest first,
    and raise the first failure (naming how many more failed). The queue is emptied first, so an error is
    raised once, and every pending check is judged even when an earlier one fails."""
    errors = []
    for key in [k for k in _pending if k[0] == device_type and (index is None or k[1] == index)]:
        for natives, verdict, backend in _pending.pop(key):
            error = verdict(*(_number(backend.to_numpy(n)) for n in natives))
            if error is not None:
                errors.append(error)
    if errors:
        more = f" ({len(errors) - 1} more deferred checks failed)" if len(errors) > 1 else ""
        first = errors[0]
        first.args = (f"{first} {DEFERRED_NOTE}{more}",)
        raise first


def numbers(values: Sequence) -> list[int | float]:
    """The values of 0-d tensors as Python numbers, read without counting: only for host-memory backends
    (``defers_value_checks`` False), where a read is no synchronisation."""
    return [_number(registry.get_backend(v._device.type).to_numpy(v._data)) for v in values]


def _number(host) -> int | float:
    value = host.reshape(-1)[0]
    return int(value) if host.dtype.kind in "biu" else float(value)


@atexit.register
def _settle_at_exit() -> None:
    """Checks still pending when the program ends: judged, and a failure printed rather than lost."""
    for device_type, index in list(_pending):
        try:
            settle(device_type, index)
        except Exception as error:  # noqa: BLE001 - reported, the process is ending anyway
            print(f"ember: a deferred value check failed on {device_type}: {error}", file=sys.stderr)


__all__ = ["LIMIT", "DEFERRED_NOTE", "submit", "pending", "settle", "numbers", "recording", "resubmit"]
