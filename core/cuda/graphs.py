"""PyTorch's CUDA graph API: ``CUDAGraph``, ``graph``, ``graph_pool_handle``, ``make_graphed_callables``.

Everything goes through the backend's ``DeviceGraphs`` hook (``DeviceRuntime.device_graphs()``; CuPy stream
capture on the cuda backend), so this module imports no CuPy; where CUDA is unavailable each entry point
raises the DeviceError saying why. As in PyTorch, work captured into a graph reads and writes the same
memory at every replay: fill captured inputs in place (``static.copy_(new)``) and read outputs before the
next replay overwrites them. Allocations made while capturing come from the graph's private pool, which
lives as long as the graph (or as anything sharing it through ``pool=``).

One difference: ``capture_error_mode`` defaults to "relaxed", not "global". CuPy's memory pools call
``cudaMalloc`` when they grow, which the stricter modes refuse while a capture runs.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..dispatch.schema.errors import DeviceError
from . import _device

_DEFAULT_MODE = "relaxed"


def _graphs():
    """The cuda backend's device graphs hook, or the DeviceError saying why there is none."""
    graphs = _device.runtime().device_graphs()
    if graphs is None:
        raise DeviceError("cuda: this backend cannot capture device graphs (its device runtime has no "
                          "device_graphs hook)")
    return graphs


class _PoolHandle:
    """What ``graph_pool_handle()`` and ``CUDAGraph.pool()`` return: an opaque token naming a private pool."""

    def __init__(self, index: int, native: Any) -> None:
        self.index, self.native = index, native

    def __repr__(self) -> str:
        return f"<ember.cuda graph pool on cuda:{self.index}>"


def graph_pool_handle() -> _PoolHandle:
    """A new private memory pool, to share between graphs captured with ``pool=`` (PyTorch's hint)."""
    graphs = _graphs()
    index = _device.backend().default_index()
    return _PoolHandle(index, graphs.new_pool(index))


class CUDAGraph:
    """A captured CUDA graph (``torch.cuda.CUDAGraph``): ``capture_begin``/``capture_end`` around the work on
    the current (non-default) stream, then ``replay()`` launches it all at once."""

    def __init__(self, keep_graph: bool = False) -> None:
        self._graphs = _graphs()
        self._index: int | None = None
        self._pool: _PoolHandle | None = None
        self._handle: Any = None
        self._allocating: Any = None
        self.keep_graph = keep_graph

    def capture_begin(self, pool: _PoolHandle | None = None, capture_error_mode: str = _DEFAULT_MODE) -> None:
        """Start capturing the work queued on the current stream of the current device."""
        if self._allocating is not None:
            raise RuntimeError("CUDAGraph.capture_begin: this graph is already capturing")
        if self._handle is not None:
            raise RuntimeError("CUDAGraph.capture_begin: this graph was already captured; call reset() first")
        index = _device.backend().default_index()
        if pool is not None and not isinstance(pool, _PoolHandle):
            raise TypeError(f"CUDAGraph.capture_begin: pool must come from graph_pool_handle() or another graph's "
                            f"pool(), got {type(pool).__name__}")
        if pool is not None and pool.index != index:
            raise DeviceError(f"CUDAGraph.capture_begin: the pool is on cuda:{pool.index}, the current device is "
                              f"cuda:{index}")
        self._pool = pool or _PoolHandle(index, self._graphs.new_pool(index))
        self._graphs.begin_capture(index, self._pool.native, capture_error_mode)
        self._index = index
        self._allocating = self._graphs.allocating_from(index, self._pool.native)
        self._allocating.__enter__()

    def capture_end(self) -> None:
        """Stop capturing: the graph is ready to ``replay``."""
        if self._allocating is None:
            raise RuntimeError("CUDAGraph.capture_end: capture_begin was not called")
        allocating, self._allocating = self._allocating, None
        allocating.__exit__(None, None, None)
        self._handle = self._graphs.end_capture(self._index)

    def _abort(self) -> None:
        if self._allocating is not None:
            allocating, self._allocating = self._allocating, None
            allocating.__exit__(None, None, None)
            self._graphs.abort_capture(self._index)

    def replay(self) -> None:
        """Launch the captured work on the current stream (the host does not wait)."""
        if self._handle is None:
            raise RuntimeError("CUDAGraph.replay: nothing was captured (call capture_begin/capture_end, or use "
                               "ember.cuda.graph)")
        self._graphs.replay(self._index, self._handle)

    def reset(self) -> None:
        """Drop the captured graph and this graph's hold on its pool."""
        self._handle = None
        self._pool = None

    def pool(self) -> _PoolHandle:
        """The token of this graph's private pool, for ``capture_begin(pool=...)`` of graphs sharing it."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: the graph has no pool before capture_begin")
        return self._pool

    def debug_dump(self, debug_path: str) -> None:
        """Write the captured graph as a DOT file, where the backend can."""
        if self._handle is None:
            raise RuntimeError("CUDAGraph.debug_dump: nothing was captured")
        self._graphs.debug_dump(self._handle, debug_path)

    def enable_debug_mode(self) -> None:
        """Kept for PyTorch's API: the graph is always kept for ``debug_dump``."""


@contextmanager
def graph(cuda_graph: CUDAGraph, pool: _PoolHandle | None = None, stream=None,
          capture_error_mode: str = _DEFAULT_MODE) -> Iterator[CUDAGraph]:
    """``with ember.cuda.graph(g):`` captures the ops inside into ``g`` on a side stream (``stream`` or a new
    one, ordered after the current one), as ``torch.cuda.graph`` does."""
    from .streams import Stream, current_stream, stream as stream_context
    if not isinstance(cuda_graph, CUDAGraph):
        raise TypeError(f"ember.cuda.graph: expected a CUDAGraph, got {type(cuda_graph).__name__}")
    _device.backend().synchronize(None)
    side = stream if stream is not None else Stream()
    before = current_stream()
    side.wait_stream(before)
    with stream_context(side):
        cuda_graph.capture_begin(pool=pool, capture_error_mode=capture_error_mode)
        try:
            yield cuda_graph
        except BaseException:
            cuda_graph._abort()
            raise
        cuda_graph.capture_end()
    before.wait_stream(side)


def make_graphed_callables(callables, sample_args: tuple, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: _PoolHandle | None = None):
    """Callables (functions or Modules) whose forward and backward each replay a CUDA graph
    (``torch.cuda.make_graphed_callables``), built on ``ember.compile(mode="reduce-overhead")``: the first
    call captures the program, the next ``config.cudagraph_warmups`` run it on a side stream, the next
    records it; all of that happens here, with ``sample_args`` and backward from ones-gradients.
    ``num_warmup_iters`` extra warm-up calls run first; ``pool`` is accepted for PyTorch's signature (each
    graph keeps a private pool of its own). A Module comes back with ``forward`` graphed."""
    from ..compiler import config
    from ..compiler.api import CompiledFunction
    from ..nn.modules.module import Module
    from ..tensor import Tensor
    _graphs()  # the DeviceError where CUDA cannot run
    single = not isinstance(callables, tuple)
    group = (callables,) if single else callables
    samples = (sample_args,) if single else sample_args
    if len(samples) != len(group):
        raise ValueError(f"make_graphed_callables: {len(group)} callables but {len(samples)} sample argument tuples")
    graphed = []
    for fn, args in zip(group, samples):
        if not isinstance(args, tuple) or not all(isinstance(a, Tensor) for a in args):
            raise TypeError("make_graphed_callables: each sample_args entry must be a tuple of tensors")
        bad = [str(a.device) for a in args if a.device.type != _device.TYPE]
        if bad:
            raise DeviceError(f"make_graphed_callables: sample arguments must be on cuda, got {', '.join(bad)}")
        target = fn.forward if isinstance(fn, Module) else fn
        compiled = CompiledFunction(target, mode="reduce-overhead")
        for _ in range(max(0, num_warmup_iters) + 2 + config.cudagraph_warmups):
            _run_with_backward(compiled, args)
        skips = [r for e in compiled.entries.values() for r in getattr(e, "cudagraph_skips", ())]
        if not compiled.entries or skips:
            why = "; ".join([r for reasons in compiled.broken.values() for r in reasons] + skips)
            raise RuntimeError(f"make_graphed_callables: {getattr(target, '__qualname__', target)} cannot be "
                               f"graphed: {why or 'it could not be captured'}")
        graphed.append(_bind(fn, compiled))
    return graphed[0] if single else tuple(graphed)


def _run_with_backward(compiled, args: tuple) -> None:
    from ..autograd import grad
    from ..dispatch.ops import F
    outputs = compiled(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    differentiable = [o for o in outputs if getattr(o, "requires_grad", False)]
    watched = compiled._watched.leaves if compiled._watched is not None else []
    inputs = [a for a in args if a.requires_grad] + [p for p in watched if p.requires_grad]
    if differentiable and inputs:  # gradients returned, not accumulated: warming up leaves .grad alone
        grad(differentiable, inputs, [F.ones_like(o) for o in differentiable], allow_unused=True)


def _bind(fn, compiled) -> Callable:
    from ..nn.modules.module import Module

    def graphed(*args, **kwargs):
        return compiled(*args, **kwargs)
    graphed.__wrapped__ = fn
    if isinstance(fn, Module):
        object.__setattr__(fn, "forward", graphed)
        return fn
    return graphed


__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables"]
