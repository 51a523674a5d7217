"""One OpenCL device's memory: PyOpenCL's pool, held to the capacity the device reports.

OpenCL has no query for free memory, and some implementations do not hold a device to its capacity: PoCL's
CPU device (3.0) creates a buffer of any size up to CL_DEVICE_MAX_MEM_ALLOC_SIZE and backs it only on first
use, so tensors can add up to several times CL_DEVICE_GLOBAL_MEM_SIZE, and where the host cannot back a
buffer PoCL reports success with no memory behind it and the process crashes when a kernel touches it. So
Ember keeps the count itself: an allocation that would take the pool past the device's capacity fails here,
as the device's own MEM_OBJECT_ALLOCATION_FAILURE would; ``obtain`` then frees the pool's held blocks and
tries once more (``ember.backends.device_memory``). "Free" is the capacity less what the pool holds.
"""
from __future__ import annotations

from ember.backends.device_memory import DeviceMemory, MemoryFigures


def _largest_pooled(pool, most: int) -> int:
    """The most bytes one pooled buffer can take on a device whose buffers take at most ``most``: the pool rounds
    a size up to its bin's, so sizes just below ``most`` may need a buffer above it."""
    fitting = pool.bin_number(most)
    if pool.alloc_size(fitting) > most:
        fitting -= 1
    return min(pool.alloc_size(fitting), most)


class OpenCLMemory(DeviceMemory):
    def __init__(self, name: str, device, pool) -> None:
        self.name = name
        self.pool = pool
        self.capacity = int(device.global_mem_size)
        self.largest = _largest_pooled(pool, int(device.max_mem_alloc_size))

    def allocate(self, nbytes: int):
        if self.pool.managed_bytes + nbytes > self.capacity:
            raise MemoryError("the pool would hold more than the device's CL_DEVICE_GLOBAL_MEM_SIZE")
        return self.pool.allocate(nbytes)

    def free_cache(self) -> None:
        self.pool.free_held()

    def figures(self) -> MemoryFigures:
        # the pool counts the bytes tensors asked for (active) and the rounded-up blocks it holds (managed); the
        # difference is its cache of freed blocks, and, while it has one, its rounding too
        managed = self.pool.managed_bytes
        cached = managed - self.pool.active_bytes if self.pool.held_blocks else 0
        return MemoryFigures(total=self.capacity, free=max(self.capacity - managed, 0), allocated=managed - cached,
                             cached=cached)

    def is_out_of_memory(self, error: BaseException) -> bool:
        """A refusal of ``allocate``, or a PyOpenCL error saying the device is out of memory (INVALID_BUFFER_SIZE:
        a size above CL_DEVICE_MAX_MEM_ALLOC_SIZE, which ``obtain`` refuses first unless the device misreports)."""
        if isinstance(error, MemoryError):
            return True
        import pyopencl as cl  # (here, not at import: ``import ember`` works without PyOpenCL)
        status = cl.status_code
        return isinstance(error, cl.Error) and error.code in (
            status.MEM_OBJECT_ALLOCATION_FAILURE, status.OUT_OF_RESOURCES, status.OUT_OF_HOST_MEMORY,
            status.INVALID_BUFFER_SIZE)
