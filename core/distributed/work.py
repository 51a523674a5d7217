"""``Work``: a collective in flight, polled against its deadline so that a dead peer is an error, not a hang."""
from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any, Callable

from .errors import DistBackendError


class Pending:
    """What an engine hands back for one operation: ``test()`` says whether it finished; ``finish()`` then
    runs once (writing results back into the caller's tensors) and returns the operation's result.

    An engine whose operations run in a device's own order of work (NCCL on a CUDA stream) also gives
    ``device_wait()``: it makes the caller's current stream wait for the operation, so ``finish()`` and
    everything queued after it see the results without the host waiting (PyTorch's NCCL ``Work.wait``)."""

    def __init__(self, test: Callable[[], bool], finish: Callable[[], Any] | None = None,
                 device_wait: Callable[[], None] | None = None, keep: tuple = ()):
        self.test = test
        self.finish = finish or (lambda: None)
        self.device_wait = device_wait
        self.keep = keep  # buffers the engine reads or writes until the operation finishes


def completed(finish: Callable[[], Any] | None = None) -> Pending:
    """A Pending that needs no communication (a world of one, an empty message)."""
    return Pending(lambda: True, finish)


def poll(test: Callable[[], bool], deadline: float) -> bool:
    """Test until done or ``deadline`` (``time.monotonic``). MPI progresses only inside its calls, and even
    ``sleep(0)`` costs ~50 µs of timer slack, so test back to back for the first 20 ms (Python still hands
    the GIL to autograd's threads every switch interval), then back off to at most 1 ms between tests."""
    spin_until = time.monotonic() + 0.02
    delay = 5e-5
    while not test():
        now = time.monotonic()
        if now >= deadline:
            return False
        if now >= spin_until:
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
    return True


class Work:
    """PyTorch's ``Work``: returned by collectives called with ``async_op=True``."""

    def __init__(self, op_name: str, group, pending: Pending):
        self._op_name = op_name
        self._group = group
        self._pending = pending
        self._deadline = time.monotonic() + group.timeout.total_seconds()
        self._lock = threading.Lock()
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None

    def is_completed(self) -> bool:
        """True once the operation finished (its results are then in the tensors); for device-ordered work,
        once the device has finished it, even after ``wait()`` returned."""
        with self._lock:
            if not self._done and self._pending.test():
                self._finish()
            return self._done and (self._pending.device_wait is None or self._pending.test())

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until done; raise ``DistBackendError`` at the group's timeout (or ``timeout``, if sooner).
        Device-ordered work (NCCL) given no ``timeout`` only puts the current stream behind the operation."""
        with self._lock:
            if not self._done and timeout is None and self._pending.device_wait is not None:
                self._pending.device_wait()
                self._finish()
            if not self._done:
                deadline = self._deadline
                if timeout is not None:
                    deadline = min(deadline, time.monotonic() + _seconds(timeout))
                if not poll(self._pending.test, deadline):
                    self._exception = self._group.timed_out(self._op_name, deadline == self._deadline, timeout)
                    raise self._exception
                self._finish()
        if self._exception is not None:
            raise self._exception
        return True

    def is_success(self) -> bool:
        return self._done and self._exception is None

    def exception(self) -> BaseException | None:
        return self._exception

    def result(self) -> Any:
        self.wait()
        return self._result

    def _finish(self) -> None:
        self._result = self._pending.finish()
        self._done = True


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


__all__ = ["Work", "Pending", "completed", "poll", "DistBackendError"]
