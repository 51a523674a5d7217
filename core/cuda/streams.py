"""PyTorch's CUDA streams and events: ``Stream``, ``Event``, ``current_stream``, ``stream(s)``, ``record_stream``.

Every op on a cuda tensor runs on the current stream of its device. ``with ember.cuda.stream(s):`` makes
``s`` that stream (and, as ``torch.cuda.set_stream`` does, its device the current device) and puts both
back on exit, so kernels, uploads and random draws issued inside run on ``s``. Streams from
``Stream()`` do not synchronize with the default stream: order them with ``wait_stream``/``wait_event``,
as in PyTorch. Everything reaches the backend through its ``device_runtime`` hook; where CUDA is
unavailable each call raises the DeviceError saying why, except ``stream(None)``, which does nothing.
"""
from __future__ import annotations

from typing import Any

from ..dispatch.schema.device import device as _device_type
from ..dispatch.contract.device_runtime import DeviceRuntime
from ..dispatch.execution import deferred_checks
from ..dispatch.schema.errors import DeviceError
from ..tensor import Tensor
from . import _device


class Stream:
    """A queue of device work on one cuda device (``torch.cuda.Stream``). Lower ``priority`` runs first."""

    def __init__(self, device=None, priority: int = 0) -> None:
        index = _device.index_of(device)
        runtime = _device.runtime()
        self._bind(runtime, index, runtime.new_stream(index, int(priority)))

    @classmethod
    def _of(cls, runtime: DeviceRuntime, index: int, native: Any) -> "Stream":
        """A Stream object for a backend stream that already exists (the current or default one)."""
        stream = cls.__new__(cls)
        stream._bind(runtime, index, native)
        return stream

    def _bind(self, runtime: DeviceRuntime, index: int, native: Any) -> None:
        self._runtime, self._index, self._native = runtime, index, native

    @property
    def device(self) -> _device_type:
        return _device_type(_device.TYPE, self._index)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` (0 for the legacy default stream), for CuPy, Numba or ctypes."""
        return self._runtime.stream_pointer(self._native)

    @property
    def priority(self) -> int:
        return self._runtime.stream_priority(self._index, self._native)

    def query(self) -> bool:
        """Whether all work queued on this stream has finished (never waits)."""
        return self._runtime.stream_query(self._index, self._native)

    def synchronize(self) -> None:
        """Block the host until all work queued on this stream has finished (and judge the value checks queued
        on the device, as every synchronisation does)."""
        self._runtime.stream_synchronize(self._index, self._native)
        _judge_checks(self._index)

    def wait_event(self, event: "Event") -> None:
        """Make work queued on this stream from now on wait for ``event`` (the host does not wait)."""
        event.wait(self)

    def wait_stream(self, stream: "Stream") -> None:
        """Make work queued on this stream from now on wait for what is queued on ``stream`` now."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one when None) behind the work queued on this stream; returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return False
        return self._index == other._index and self.cuda_stream == other.cuda_stream

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self._index))

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A marker in a stream's work (``torch.cuda.Event``): wait for it, test it, time between two of them.

    As in PyTorch, the device event is made when first recorded, on the recording stream's device.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self._runtime = _device.runtime()
        if interprocess and enable_timing:
            raise ValueError("Event: an interprocess event cannot time (CUDA requires timing off for "
                             "interprocess events); pass enable_timing=False")
        self.enable_timing, self.blocking, self.interprocess = bool(enable_timing), bool(blocking), bool(interprocess)
        self._index: int | None = None
        self._native: Any = None

    def record(self, stream: Stream | None = None) -> None:
        """Place this event behind the work queued on ``stream`` (default: the current stream) now."""
        if stream is None:
            stream = current_stream()
        if self._native is None:
            self._index = stream._index
            self._native = self._runtime.new_event(stream._index, self.enable_timing, self.blocking,
                                                   self.interprocess)
        elif self._index != stream._index:
            raise DeviceError(f"Event device {_device.TYPE}:{self._index} does not match the recording stream's "
                              f"device {stream.device}")
        self._runtime.record_event(stream._index, self._native, stream._native)

    def wait(self, stream: Stream | None = None) -> None:
        """Make work queued on ``stream`` (default: the current stream) from now on wait for this event.
        A never-recorded event has nothing to wait for."""
        if self._native is None:
            return
        if stream is None:
            stream = current_stream()
        self._runtime.stream_wait_event(stream._index, stream._native, self._native)

    def query(self) -> bool:
        """Whether the work before this event has finished (True for a never-recorded event)."""
        return True if self._native is None else self._runtime.event_query(self._native)

    def synchronize(self) -> None:
        """Block the host until the work before this event has finished."""
        if self._native is not None:
            self._runtime.event_synchronize(self._native)
            _judge_checks(self._index)

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds from this event to ``end_event``; both must be timing events that have completed."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._native is None or end_event._native is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._runtime.elapsed_ms(self._native, end_event._native)

    @property
    def cuda_event(self) -> int:
        """The raw ``cudaEvent_t`` (0 until the event is first recorded)."""
        return 0 if self._native is None else self._runtime.event_pointer(self._native)

    def __repr__(self) -> str:
        if self._native is None:
            return "<ember.cuda.Event uninitialized>"
        return f"<ember.cuda.Event {self.cuda_event:#x}>"


def _judge_checks(index: int | None) -> None:
    """After a wait on the host: the value checks pending on the device (``deferred_checks``), as there."""
    if deferred_checks._pending:
        deferred_checks.settle(_device.TYPE, index)


def current_stream(device=None) -> Stream:
    """The stream ops on ``device`` (default: the current device) run on now, in this thread."""
    index = _device.index_of(device)
    runtime = _device.runtime()
    return Stream._of(runtime, index, runtime.current_stream(index))


def default_stream(device=None) -> Stream:
    """The stream ``device`` starts with (the legacy default stream, ``cuda_stream == 0``)."""
    index = _device.index_of(device)
    runtime = _device.runtime()
    return Stream._of(runtime, index, runtime.default_stream(index))


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` the current stream of its device, and its device the current device (None: no-op).
    Prefer ``with ember.cuda.stream(s):``, which puts the previous ones back."""
    if stream is None:
        return
    backend = _device.backend()
    if backend.default_index() != stream._index:
        backend.set_default_index(stream._index)
    stream._runtime.set_current_stream(stream._index, stream._native)


class StreamContext:
    """``with StreamContext(s):`` runs the ops inside on ``s``; on exit the current stream of ``s``'s device,
    the current device and its current stream are what they were. ``StreamContext(None)`` does nothing."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._saved: list[list[Stream]] = []  # one entry per active ``with``, so a context may be re-entered

    def __enter__(self) -> None:
        target = self.stream
        if target is None:
            return
        before = current_stream()
        saved = [before]
        if before._index != target._index:
            saved.insert(0, current_stream(target._index))  # put back first; ``before`` then restores the device
        self._saved.append(saved)
        set_stream(target)

    def __exit__(self, *exc_info) -> None:
        if self.stream is None:
            return
        for previous in self._saved.pop():
            set_stream(previous)


def stream(stream: Stream | None) -> StreamContext:
    """``with ember.cuda.stream(s):``: ops issued inside run on ``s`` (None: a no-op, as in PyTorch)."""
    return StreamContext(stream)


def record_stream(self: Tensor, stream: Stream) -> None:
    """``Tensor.record_stream``: this tensor's device memory is in use by ``stream``, so it is not handed out
    again before the work queued on ``stream`` at this call has finished, even if the tensor is freed first.
    (PyTorch also covers work queued later, until the tensor is freed; call this after that work is queued.)"""
    if not isinstance(stream, Stream):
        raise TypeError(f"record_stream: expected an ember.cuda.Stream, got {type(stream).__name__}")
    if self.device.type != _device.TYPE:
        raise DeviceError(f"record_stream: expected a {_device.TYPE} tensor, got one on {self.device}")
    stream._runtime.keep_until_done(stream._index, self._data, stream._native)
