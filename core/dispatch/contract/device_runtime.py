"""The contract behind ``Backend.device_runtime()``: streams, events and device facts of one device type.

``ember.cuda``'s ``Stream``, ``Event``, ``Tensor.record_stream``, ``get_device_properties``, ``mem_get_info``
and ``nvtx`` are written once in core on these methods; a backend implements them on its own handles
(CuPy's streams and events for cuda). Core never looks inside a stream or event handle: it only passes
handles back, with the index of the device they belong to, so a method can make that device current
first (a default stream is shared by every device, so it means something only with the device).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ContextManager


class DeviceRuntime(ABC):
    """Streams, events and device facts: a backend offering them implements every method."""

    # -- streams -----------------------------------------------------------------------------
    @abstractmethod
    def new_stream(self, index: int, priority: int) -> Any:
        """A new stream on device ``index`` that does not synchronize with the default stream (as PyTorch's
        streams); lower ``priority`` runs first, and the device clamps it to its range."""

    @abstractmethod
    def current_stream(self, index: int) -> Any:
        """The stream the backend's kernels for device ``index`` run on now, in this thread."""

    @abstractmethod
    def default_stream(self, index: int) -> Any:
        """The stream device ``index`` starts with."""

    @abstractmethod
    def set_current_stream(self, index: int, stream: Any) -> None:
        """Make ``stream`` the one the backend's kernels, uploads and random draws for ``index`` run on."""

    @abstractmethod
    def stream_pointer(self, stream: Any) -> int:
        """The native handle's address (``cudaStream_t``), for interop and for telling streams apart."""

    @abstractmethod
    def stream_priority(self, index: int, stream: Any) -> int:
        ...

    @abstractmethod
    def stream_query(self, index: int, stream: Any) -> bool:
        """Whether all work queued on ``stream`` has finished (without waiting)."""

    @abstractmethod
    def stream_synchronize(self, index: int, stream: Any) -> None:
        ...

    @abstractmethod
    def stream_wait_event(self, index: int, stream: Any, event: Any) -> None:
        """Make work queued on ``stream`` from now on wait for ``event`` (on the device; the host goes on)."""

    # -- events ------------------------------------------------------------------------------
    @abstractmethod
    def new_event(self, index: int, enable_timing: bool, blocking: bool, interprocess: bool) -> Any:
        ...

    @abstractmethod
    def record_event(self, index: int, event: Any, stream: Any) -> None:
        """Place ``event`` behind the work queued on ``stream`` now."""

    @abstractmethod
    def event_pointer(self, event: Any) -> int:
        ...

    @abstractmethod
    def event_query(self, event: Any) -> bool:
        ...

    @abstractmethod
    def event_synchronize(self, event: Any) -> None:
        ...

    @abstractmethod
    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two completed timing events."""

    # -- memory and facts --------------------------------------------------------------------
    @abstractmethod
    def keep_until_done(self, index: int, native: Any, stream: Any) -> None:
        """``Tensor.record_stream``: keep ``native``'s memory from being reused until the work queued on
        ``stream`` now has finished."""

    @abstractmethod
    def mem_get_info(self, index: int) -> tuple[int, int]:
        """(free, total) bytes of device memory, as the driver reports them."""

    @abstractmethod
    def properties(self, index: int) -> dict[str, Any]:
        """At least ``name``, ``major``, ``minor``, ``total_memory`` (bytes) and ``multi_processor_count``;
        optionally more of PyTorch's ``_CudaDeviceProperties`` fields, under PyTorch's names."""

    # -- profiler annotations (no-ops where no annotation library is present) ------------------
    @abstractmethod
    def range_push(self, message: str) -> None:
        ...

    @abstractmethod
    def range_pop(self) -> None:
        ...

    @abstractmethod
    def mark(self, message: str) -> None:
        ...

    # -- device graphs (optional) --------------------------------------------------------------
    def device_graphs(self) -> "DeviceGraphs | None":
        """Private memory pools and stream capture (``DeviceGraphs``) for ``ember.compile(mode="reduce-overhead")``
        and ``ember.cuda.CUDAGraph``, or None (the default): compiled programs then replay op by op."""
        return None


class DeviceGraphs(ABC):
    """Whole-stream capture and replay (CUDA graphs), and the private memory pools captured work allocates from.

    Core drives it so (``ember.compiler.device_graph``): warm-up runs on a non-default stream, then
    ``begin_capture`` on that stream (the current one), the program runs once with its allocations served by
    ``pool`` (``allocating_from``), ``end_capture`` returns the graph and ``replay`` launches it again on the
    current stream. Every address the graph uses stays valid while the pool lives, so a replay allocates
    nothing; nothing may read device values on the host while capturing. Random draws made while capturing
    must read their seed and offset from device memory, advanced at every ``replay``, or every replay would
    repeat them: that is the backend's own business, between ``begin_capture`` and ``replay``.
    """

    @abstractmethod
    def new_pool(self, index: int) -> Any:
        """A private memory pool on device ``index``: its blocks go to nobody else, so captured addresses
        stay valid; pools may be shared by several graphs (``ember.cuda.graph_pool_handle``)."""

    @abstractmethod
    def allocating_from(self, index: int, pool: Any) -> ContextManager[None]:
        """A context inside which every allocation this backend makes on device ``index`` comes from ``pool``."""

    @abstractmethod
    def pool_allocations(self, pool: Any) -> int:
        """How many allocations ``pool`` has served so far (a replay that allocates adds none)."""

    @abstractmethod
    def begin_capture(self, index: int, pool: Any, error_mode: str) -> None:
        """Start capturing the work queued on the current stream of device ``index``, which must not be the
        default stream, with allocations from ``pool``. ``error_mode`` is CUDA's stream capture mode:
        "global", "thread_local" or "relaxed" (PyTorch's ``capture_error_mode``)."""

    @abstractmethod
    def end_capture(self, index: int) -> Any:
        """Stop capturing; the captured work as a graph handle, ready to replay."""

    @abstractmethod
    def abort_capture(self, index: int) -> None:
        """Stop a capture that failed and leave the stream usable (the partial graph is dropped)."""

    @abstractmethod
    def replay(self, index: int, graph: Any) -> None:
        """Queue the whole graph on the current stream of device ``index`` (the host does not wait)."""

    def debug_dump(self, graph: Any, path: str) -> None:
        """Write the graph's structure to ``path`` (CUDA's DOT dump) where the backend can."""
        raise RuntimeError(f"{type(self).__name__}: this backend cannot dump its graphs")
