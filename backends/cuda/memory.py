"""Device memory through CuPy's memory pool: its figures and out-of-memory errors, peak tracking, and
asynchronous host-to-device copies.

``CupyMemory`` is one device's side of ``ember.backends.device_memory``: uploads and copies allocate through
it (one retry after the pool's ``free_all_blocks()``, then ``OutOfMemoryError`` with the device's figures).
Allocations inside kernels are CuPy's own: its pool frees its blocks and retries by itself, and the
``OutOfMemoryError`` it then raises (a MemoryError) reaches the dispatcher's kernel-error hook, which asks
the backend to ``explain`` it (``CudaBackend.out_of_memory``): the same message, with the op's name.

CuPy's pool reports what is in use but not the most that ever was, which ``max_memory_allocated``
needs: ``PeakTracker`` wraps the current allocator (the default pool's, unless the caller set another)
and records each device's peak after every allocation. CuPy's allocator is one for the whole process, so
the wrapper costs a Python call per allocation (Ember's and the caller's own CuPy code's alike). It is
therefore installed only once a *peak* is asked for (``reset_peak_memory_stats``, ``max_memory_allocated``,
the peak keys of ``memory_stats``): ``memory_stats`` returns a ``Stats`` mapping whose ``peak_bytes`` starts
the tracking only when it is read, so ``memory_allocated`` and ``memory_reserved`` (the pool's own counters)
never put Python on the allocation path. The first peak read is the memory in use then; from there on
peaks are exact.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Callable, Iterator

import numpy as np

from ember.backends.device_memory import DeviceMemory, MemoryFigures
from ember.dispatch import InFlight, c_contiguous

_PINNED_FROM_BYTES = 1 << 20  # smaller copies go straight from pageable memory (CUDA stages them itself)


class Stats(Mapping):
    """A device's memory statistics: ``allocated_bytes`` and ``reserved_bytes`` as measured, and ``peak_bytes``
    computed by ``peak()`` only when read (reading it may start peak tracking, which costs every allocation
    a Python call; reading the other two must not)."""

    KEYS = ("allocated_bytes", "peak_bytes", "reserved_bytes")

    def __init__(self, allocated: int, reserved: int, peak: Callable[[], int]) -> None:
        self._values = {"allocated_bytes": allocated, "reserved_bytes": reserved}
        self._peak = peak

    def __getitem__(self, key: str) -> int:
        if key == "peak_bytes":
            return max(self._values["allocated_bytes"], self._peak())
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)


class PeakTracker:
    def __init__(self, cupy) -> None:
        self._cupy = cupy
        self._pool = cupy.get_default_memory_pool()
        self._inner = None  # the allocator wrapped, once tracking has started
        self._peak: dict[int, int] = {}

    @property
    def tracking(self) -> bool:
        """Whether allocations go through ``_malloc`` (only once a peak was asked for)."""
        return self._inner is not None

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

    def _peak_of(self, index: int) -> int:
        self._track()
        return self._peak.get(index, 0)

    def stats(self, index: int) -> Stats:
        with self._cupy.cuda.Device(index):
            used, reserved = self._pool.used_bytes(), self._pool.total_bytes()
        return Stats(used, reserved, lambda: self._peak_of(index))

    def reset_peak(self, index: int) -> None:
        self._track()
        with self._cupy.cuda.Device(index):
            self._peak[index] = self._pool.used_bytes()


#: CuPy's words for the bytes it could not get: "Out of memory allocating 1,024 bytes (allocated so far: ...)"
_ALLOCATING = re.compile(r"allocating ([\d,]+) bytes")


class CupyMemory(DeviceMemory):
    """``cuda:index`` through CuPy's default pool (and its current allocator, ``PeakTracker``'s included)."""

    def __init__(self, cupy, index: int) -> None:
        self._cupy = cupy
        self.index = index
        self.name = f"cuda:{index}"

    def allocate(self, nbytes: int):
        with self._cupy.cuda.Device(self.index):
            return self._cupy.cuda.alloc(nbytes)

    def free_cache(self) -> None:
        """Give the pool's free blocks on this device back to the driver (PyTorch's empty_cache)."""
        with self._cupy.cuda.Device(self.index):
            self._cupy.get_default_memory_pool().free_all_blocks()
        self._cupy.get_default_pinned_memory_pool().free_all_blocks()

    def figures(self) -> MemoryFigures:
        pool = self._cupy.get_default_memory_pool()
        with self._cupy.cuda.Device(self.index):
            free, total = self._cupy.cuda.runtime.memGetInfo()
            used, held = pool.used_bytes(), pool.total_bytes()
        return MemoryFigures(total=int(total), free=int(free), allocated=int(used), cached=int(held - used))

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, self._cupy.cuda.memory.OutOfMemoryError)

    @staticmethod
    def bytes_asked(error: BaseException) -> int | None:
        """The bytes CuPy's OutOfMemoryError says it could not allocate (None where it does not say)."""
        found = _ALLOCATING.search(str(error))
        return int(found.group(1).replace(",", "")) if found else None


class Uploader:
    """Host-to-device copies that return before the copy finishes.

    Large arrays go through pinned (page-locked) host memory, the only memory the GPU can read
    while the host moves on; each pinned buffer is kept until an event recorded after its copy
    has completed, so the pool cannot hand it out again while the GPU still reads it.
    """

    def __init__(self, cupy) -> None:
        self._cupy = cupy
        self._in_flight = InFlight()

    def upload(self, host: np.ndarray, memory: CupyMemory):
        """``host`` as a new array on ``memory``'s device (OutOfMemoryError where it cannot be had)."""
        cupy = self._cupy
        host = c_contiguous(host)
        with cupy.cuda.Device(memory.index):
            out = cupy.ndarray(host.shape, host.dtype, memptr=memory.obtain(host.nbytes))
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
