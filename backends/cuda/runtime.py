"""The cuda backend's ``device_runtime``: CuPy streams and events, record_stream, device facts and NVTX.

Ember's kernels, uploads (``memory.Uploader``) and random draws (``rng.CudaGenerator``) all run on CuPy's
current stream of their device, so making a stream CuPy's current one is all ``ember.cuda.stream(s)`` needs.
Every call that names a stream runs with its device current: the default stream (handle 0) means the
current device's, and CUDA records an event only on a stream of the event's device.
"""
from __future__ import annotations

import os

from ember.dispatch import DeviceRuntime, InFlight

# CuPy's default stream is the per-thread one when this variable is set, the legacy one otherwise.
_PER_THREAD_DEFAULT = "CUPY_CUDA_PER_THREAD_DEFAULT_STREAM"

# PyTorch's _CudaDeviceProperties names for the fields of CUDA's cudaDeviceProp (as CuPy reports them).
_PROPERTY_NAMES = {"major": "major", "minor": "minor", "totalGlobalMem": "total_memory",
                   "multiProcessorCount": "multi_processor_count", "warpSize": "warp_size",
                   "maxThreadsPerMultiProcessor": "max_threads_per_multi_processor",
                   "regsPerMultiprocessor": "regs_per_multiprocessor", "l2CacheSize": "L2_cache_size",
                   "sharedMemPerBlock": "shared_memory_per_block", "integrated": "is_integrated",
                   "isMultiGpuBoard": "is_multi_gpu_board", "pciBusID": "pci_bus_id",
                   "pciDeviceID": "pci_device_id", "pciDomainID": "pci_domain_id"}


class CudaRuntime(DeviceRuntime):
    def __init__(self, cupy) -> None:
        self._cuda = cupy.cuda
        self.lent = InFlight()  # tensors lent to streams by record_stream
        self._nvtx = _load_nvtx()
        self._cupy = cupy
        self._graphs = None

    # -- device graphs -----------------------------------------------------------------------
    def device_graphs(self):
        """CUDA graphs through CuPy's stream capture, with private memory pools (``graphs.py``)."""
        if self._graphs is None:
            from .graphs import CudaGraphs
            self._graphs = CudaGraphs(self._cupy)
        return self._graphs

    # -- streams -----------------------------------------------------------------------------
    def new_stream(self, index, priority):
        with self._cuda.Device(index):
            return self._cuda.Stream(non_blocking=True, priority=int(priority))

    def current_stream(self, index):
        with self._cuda.Device(index):
            return self._cuda.get_current_stream()

    def default_stream(self, index):
        per_thread = os.environ.get(_PER_THREAD_DEFAULT, "0") not in ("", "0")
        return self._cuda.Stream.ptds if per_thread else self._cuda.Stream.null

    def set_current_stream(self, index, stream):
        with self._cuda.Device(index):
            stream.use()  # CuPy's current stream of this device, in this thread

    def stream_pointer(self, stream):
        return int(stream.ptr)

    def stream_priority(self, index, stream):
        with self._cuda.Device(index):
            return int(stream.priority)

    def stream_query(self, index, stream):
        with self._cuda.Device(index):
            return bool(stream.done)

    def stream_synchronize(self, index, stream):
        with self._cuda.Device(index):
            stream.synchronize()
        self.lent.release_done()

    def stream_wait_event(self, index, stream, event):
        with self._cuda.Device(index):
            stream.wait_event(event)

    # -- events ------------------------------------------------------------------------------
    def new_event(self, index, enable_timing, blocking, interprocess):
        with self._cuda.Device(index):
            return self._cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)

    def record_event(self, index, event, stream):
        with self._cuda.Device(index):
            event.record(stream)

    def event_pointer(self, event):
        return int(event.ptr)

    def event_query(self, event):
        return bool(event.done)

    def event_synchronize(self, event):
        event.synchronize()
        self.lent.release_done()

    def elapsed_ms(self, start, end):
        if not (start.done and end.done):  # CUDA would fail with cudaErrorNotReady
            raise RuntimeError("elapsed_time: both events must have completed; call end_event.synchronize() "
                               "(or ember.cuda.synchronize()) before asking for the time between them")
        return float(self._cuda.get_elapsed_time(start, end))

    # -- memory and facts --------------------------------------------------------------------
    def keep_until_done(self, index, native, stream):
        with self._cuda.Device(index):
            self.lent.keep(stream.record(), native)

    def mem_get_info(self, index):
        with self._cuda.Device(index):
            free, total = self._cuda.runtime.memGetInfo()
        return int(free), int(total)

    def properties(self, index):
        return torch_properties(self._cuda.runtime.getDeviceProperties(index))

    # -- NVTX --------------------------------------------------------------------------------
    def range_push(self, message):
        if self._nvtx is not None:
            self._nvtx.RangePush(message)

    def range_pop(self):
        if self._nvtx is not None:
            self._nvtx.RangePop()

    def mark(self, message):
        if self._nvtx is not None:
            self._nvtx.Mark(message)


def torch_properties(raw: dict) -> dict:
    """CuPy's ``getDeviceProperties`` dict (CUDA's field names, the name as bytes) under PyTorch's names."""
    name = raw["name"]
    facts = {"name": name.decode(errors="replace") if isinstance(name, bytes) else str(name)}
    facts.update((ours, raw[theirs]) for theirs, ours in _PROPERTY_NAMES.items() if theirs in raw)
    for flag in ("is_integrated", "is_multi_gpu_board"):
        if flag in facts:
            facts[flag] = bool(facts[flag])
    return facts


def _load_nvtx():
    """CuPy's NVTX bindings, or None where CuPy was built without them (annotations are then no-ops)."""
    try:
        from cupy.cuda import nvtx
    except Exception:  # an ImportError, or a library that fails to load
        return None
    return nvtx if getattr(nvtx, "available", True) else None
