"""The cuda backend's ``DeviceGraphs``: CuPy stream capture, ``cupy.cuda.Graph`` replay, private memory pools.

A pool is a ``cupy.cuda.MemoryPool`` of its own, made current for this thread with ``using_allocator`` (it
goes over whatever allocator is installed, ``PeakTracker``'s included, and only inside the ``with``), so its
blocks are never handed to anyone else and the addresses a graph captured stay valid while it lives.
Captures run on the caller's current stream (CuPy refuses the legacy default stream, so the caller switches
to a side stream first) and make the device's generators graph safe while they run (``graph_rng.py``).
This file runs only on a GPU: CI checks its logic through the CPU tests of what it calls.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ember.dispatch import DeviceGraphs

from . import rng

#: capture_error_mode -> CuPy's name of CUDA's cudaStreamCaptureMode
_MODES = {"global": "streamCaptureModeGlobal", "thread_local": "streamCaptureModeThreadLocal",
          "relaxed": "streamCaptureModeRelaxed"}


class CountingPool:
    """A private ``cupy.cuda.MemoryPool`` that counts the allocations it serves."""

    def __init__(self, cupy, index: int) -> None:
        with cupy.cuda.Device(index):
            self.pool = cupy.cuda.MemoryPool()
        self.index = index
        self.allocations = 0

    def malloc(self, size: int):
        self.allocations += 1
        return self.pool.malloc(size)


@dataclass
class CapturedGraph:
    """A captured ``cupy.cuda.Graph`` and, per generator it drew from, how much each replay draws."""
    graph: Any
    index: int
    pool: CountingPool
    draws: list = field(default_factory=list)  # (generator, values per replay)


class CudaGraphs(DeviceGraphs):
    def __init__(self, cupy) -> None:
        self._cupy = cupy
        self._capturing: dict[int, tuple] = {}  # index -> (stream, pool, generators)

    def new_pool(self, index: int) -> CountingPool:
        return CountingPool(self._cupy, index)

    @contextmanager
    def allocating_from(self, index: int, pool: CountingPool) -> Iterator[None]:
        cuda = self._cupy.cuda
        with cuda.Device(index), cuda.using_allocator(pool.malloc):
            yield

    def pool_allocations(self, pool: CountingPool) -> int:
        return pool.allocations

    def begin_capture(self, index: int, pool: CountingPool, error_mode: str) -> None:
        if error_mode not in _MODES:
            raise ValueError(f"capture_error_mode must be one of {', '.join(_MODES)}, got {error_mode!r}")
        if index in self._capturing:
            raise RuntimeError(f"cuda:{index}: a graph capture is already in progress on this device")
        cuda = self._cupy.cuda
        with cuda.Device(index):
            stream = cuda.get_current_stream()
            if stream.ptr in (0, 1, 2):  # legacy, per-thread default handles
                raise RuntimeError("cuda graphs: capture must run on a non-default stream (CUDA refuses the "
                                   "default stream); use ember.cuda.graph(g), which picks a side stream, or "
                                   "ember.cuda.stream(s)")
            generators = [g for g in list(rng.LIVE) if g.index == index]
            for g in generators:  # before capture: may allocate and write the device-side state
                g.capture_begin()
            mode = getattr(cuda.runtime, _MODES[error_mode])
            try:
                stream.begin_capture(mode)
            except BaseException:
                for g in generators:
                    g.capture_end()
                raise
        self._capturing[index] = (stream, pool, generators)

    def end_capture(self, index: int) -> CapturedGraph:
        stream, pool, generators = self._capturing.pop(index)
        with self._cupy.cuda.Device(index):
            draws = [(g, g.capture_end()) for g in generators]  # the device-side advances end the graph
            graph = stream.end_capture()
        return CapturedGraph(graph, index, pool, [(g, n) for g, n in draws if n])

    def abort_capture(self, index: int) -> None:
        found = self._capturing.pop(index, None)
        if found is None:
            return
        stream, _, generators = found
        for g in generators:
            g._book.end()  # nothing was queued for real: the host offsets are where they were
        with self._cupy.cuda.Device(index):
            try:
                if stream.is_capturing():
                    stream.end_capture()  # an invalidated capture: CUDA reports the error here; drop it
            except Exception:  # noqa: BLE001  the original error is what the caller reports
                pass

    def replay(self, index: int, graph: CapturedGraph) -> None:
        with self._cupy.cuda.Device(index):
            for g, _ in graph.draws:
                g.before_replay()
            graph.graph.launch()  # on the current stream
            for g, drawn in graph.draws:
                g.replayed(drawn)

    def debug_dump(self, graph: CapturedGraph, path: str) -> None:
        dump = getattr(graph.graph, "debug_dump", None)
        if dump is None:
            raise RuntimeError(f"debug_dump: CuPy {self._cupy.__version__} cannot write a captured graph's DOT file")
        dump(path)
