"""Device memory through CuPy's memory pool, with peak tracking, and asynchronous host-to-device copies.

CuPy's pool reports what is in use but not the most that ever was, which ``max_memory_allocated``
needs: ``PeakTracker`` wraps the current allocator (the default pool's, unless the caller set another)
and records each device's peak after every allocation. CuPy's allocator is one for the whole process, so
the wrapper (a Python call per allocation, Ember's and the caller's own CuPy code's alike) is installed
only once memory statistics are first asked for (``reset_peak_memory_stats``, ``max_memory_allocated``,
``memory_allocated``, ...): a process that never asks pays nothing, and the first answer's peak is the
memory in use then.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import InFlight, c_contiguous

_PINNED_FROM_BYTES = 1 << 20  # smaller copies go straight from pageable memory (CUDA stages them itself)


class PeakTracker:
    def __init__(self, cupy) -> None:
        self._cupy = cupy
        self._pool = cupy.get_default_memory_pool()
        self._inner = None  # the allocator wrapped, once tracking has started
        self._peak: dict[int, int] = {}

    def _track(self) -> None:
        """Start recording peaks: from now on every CuPy allocation goes through ``_malloc``."""
        if self._inner is None:
            self._inner = self._cupy.cuda.get_allocator()
            self._cupy.cuda.set_allocator(self._malloc)

    def _malloc(self, size: int):
        memory = self._inner(size)
        used = self._pool.used_bytes()
        device = memory.device_id
        if used > self._peak.get(device, 0):
            self._peak[device] = used
        return memory

    def stats(self, index: int) -> dict[str, int]:
        self._track()
        with self._cupy.cuda.Device(index):
            used, reserved = self._pool.used_bytes(), self._pool.total_bytes()
        return {"allocated_bytes": used, "peak_bytes": max(used, self._peak.get(index, 0)),
                "reserved_bytes": reserved}

    def reset_peak(self, index: int) -> None:
        self._track()
        with self._cupy.cuda.Device(index):
            self._peak[index] = self._pool.used_bytes()

    def release_cached(self, index: int) -> None:
        """Give the pool's free blocks on ``index`` back to the driver (PyTorch's empty_cache)."""
        with self._cupy.cuda.Device(index):
            self._pool.free_all_blocks()
        self._cupy.get_default_pinned_memory_pool().free_all_blocks()


class Uploader:
    """Host-to-device copies that return before the copy finishes.

    Large arrays go through pinned (page-locked) host memory, the only memory the GPU can read
    while the host moves on; each pinned buffer is kept until an event recorded after its copy
    has completed, so the pool cannot hand it out again while the GPU still reads it.
    """

    def __init__(self, cupy) -> None:
        self._cupy = cupy
        self._in_flight = InFlight()

    def upload(self, host: np.ndarray, index: int):
        cupy = self._cupy
        host = c_contiguous(host)
        with cupy.cuda.Device(index):
            out = cupy.empty(host.shape, host.dtype)
            if host.size == 0:
                return out
            stream = cupy.cuda.get_current_stream()
            if host.nbytes < _PINNED_FROM_BYTES:
                out.set(host, stream=stream)
                return out
            import cupyx
            pinned = cupyx.empty_pinned(host.shape, host.dtype)
            pinned[...] = host
            out.set(pinned, stream=stream)
            self._in_flight.keep(stream.record(), pinned)
        return out
