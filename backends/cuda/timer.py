"""Device time for ``ember.profiler``: CUDA events recorded on a device's current stream."""
from __future__ import annotations

from ember.dispatch import DeviceTimer


class CudaTimer(DeviceTimer):
    """Events on device ``index``'s current CuPy stream, where Ember's kernels for it run."""

    def __init__(self, cupy, index: int) -> None:
        self._cupy = cupy
        self._device = cupy.cuda.Device(index)

    def mark(self):
        with self._device:
            event = self._cupy.cuda.Event()  # timing is on by default (disable_timing=False)
            event.record()  # on the current stream of this device
        return event

    def elapsed_ms(self, start, end) -> float:
        end.synchronize()
        return float(self._cupy.cuda.get_elapsed_time(start, end))
