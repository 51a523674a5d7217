"""Device time for ``ember.profiler``: OpenCL profiling events of markers in a device's in-order queue."""
from __future__ import annotations

from ember.dispatch import DeviceTimer


class OpenCLTimer(DeviceTimer):
    """Markers in one device's queue. A marker completes when the work queued before it has, so the
    difference of two markers' completion times is the device time of the work between them."""

    def __init__(self, runtime) -> None:
        import pyopencl as cl  # (here, not at import: ``import ember`` works without PyOpenCL)
        self._queue = runtime.queue
        self._enqueue_marker = cl.enqueue_marker

    def mark(self):
        return self._enqueue_marker(self._queue)

    def elapsed_ms(self, start, end) -> float:
        end.wait()
        return (end.profile.end - start.profile.end) / 1e6  # nanoseconds of the device's profiling clock
