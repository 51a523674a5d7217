"""``ember.cuda.nvtx``: named ranges and marks for Nsight Systems (``torch.cuda.nvtx``).

Annotations go to NVTX through the cuda backend where CUDA and NVTX are present, and are no-ops otherwise,
so profiled code runs unchanged on any machine. Range depths are counted here, per thread, because CuPy's
NVTX calls do not return them.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..dispatch.contract.device_runtime import DeviceRuntime
from . import _device

_open = threading.local()  # .depth: ranges pushed and not yet popped in this thread

__all__ = ["range_push", "range_pop", "mark", "range"]


def _runtime() -> DeviceRuntime | None:
    """The backend's runtime where CUDA can be used, else None (every call is then a no-op)."""
    return _device.runtime() if _device.available() else None


def range_push(msg: str) -> int:
    """Open a nested range named ``msg``; returns its zero-based depth."""
    depth = getattr(_open, "depth", 0)
    runtime = _runtime()
    if runtime is not None:
        runtime.range_push(str(msg))
    _open.depth = depth + 1
    return depth


def range_pop() -> int:
    """Close the innermost open range; returns its zero-based depth (-1 when no range is open)."""
    depth = getattr(_open, "depth", 0)
    if depth == 0:
        return -1
    runtime = _runtime()
    if runtime is not None:
        runtime.range_pop()
    _open.depth = depth - 1
    return depth - 1


def mark(msg: str) -> None:
    """An instant event named ``msg`` on the profiler's timeline."""
    runtime = _runtime()
    if runtime is not None:
        runtime.mark(str(msg))


@contextmanager
def range(msg: str, *args, **kwargs) -> Iterator[None]:  # noqa: A001  (PyTorch's name)
    """``with nvtx.range("step {}", i):``: a range around the block; ``msg`` is formatted with the arguments."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
