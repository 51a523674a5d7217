"""One compiled program with a static memory plan, replayed as a device graph where the backend captures one.

This is what ``mode="reduce-overhead"`` runs instead of a plain ``Program`` (PyTorch's CUDA-graph trees,
one program at a time). The plan:

- inputs marked *copied* (the call's arguments, gradients read at entry) are copied into buffers the
  program owns, allocated once; inputs marked *static* (parameters, buffers, values another graph keeps)
  are read where they are, and where a graph was captured they must still be the same arrays;
- on a backend whose ``DeviceRuntime`` offers ``device_graphs()`` (CUDA), the buffers come from a private
  pool kept for the program's life; after ``config.cudagraph_warmups`` ordinary runs on a side stream the
  program runs once under stream capture, inside that pool, so every intermediate and output has an address
  that stays valid, and each later call is one ``replay``, which allocates nothing;
- outputs: the first ``fresh`` ones are copied out of the pool after every replay, so what a call returns is
  never overwritten by the next one (a copy per output, cheap for a step's loss; Ember tensors have no
  per-access liveness check that could raise instead, and a silently changing result is not acceptable);
  the rest (saved activations, gradients put in ``.grad``) stay in the pool: the next replay overwrites them,
  and ``generation`` lets their readers tell (a backward run after its forward was replayed again raises).

Value checks the captured calls make (index ranges: ``deferred_checks``) are queued on the device; the
capture collects them, and each replay queues copies of their numbers, judged at the next synchronisation.

Where the backend has no ``device_graphs`` (cpu, opencl), the program runs as it is on the static inputs:
its kernels allocate as usual and outputs are fresh anyway. A capture that fails (a host read the tracer
could not see) is undone, recorded in ``failures``, and the program runs without a graph from then on.
"""
from __future__ import annotations

import logging
from typing import Any

from ..dispatch.contract import registry
from ..dispatch.contract.device_runtime import DeviceGraphs
from ..dispatch.execution import deferred_checks, links
from ..dispatch.schema.errors import DeviceError
from . import config
from .entry import GuardMiss
from .graph import Value

log = logging.getLogger("ember._dynamo")


def graphs_of(device) -> DeviceGraphs | None:
    """The device graphs hook of ``device``'s backend, or None where it has none (or no device runtime)."""
    if device is None:
        return None
    backend = registry.get_backend(device.type)
    try:
        runtime = backend.device_runtime()
    except DeviceError:  # a backend without streams has no graphs either
        return None
    hook = getattr(runtime, "device_graphs", None)  # a runtime written before the hook existed has none
    return hook() if hook is not None else None


def one_device(program, inputs: list[Value], outputs: list[Value]):
    """The one device every value of ``program`` lives on, or None where there are several."""
    devices = {v.device for v in inputs} | {v.device for v in outputs}
    for step in program.steps:
        devices.update(v.device for v in step.operands())
        made = getattr(step, "outputs", ())
        devices.update(v.device for v in (m[1] if isinstance(m, tuple) else m for m in made) if isinstance(v, Value))
    return next(iter(devices)) if len(devices) == 1 else None


class DeviceGraph:
    """``run(*natives)`` as ``program.run`` does, through the static plan above. ``copied[i]`` says whether
    input ``i`` is copied into an owned buffer; the first ``fresh`` outputs are returned as fresh arrays."""

    def __init__(self, program, inputs: list[Value], copied: list[bool], outputs: list[Value], fresh: int,
                 name: str) -> None:
        self.program, self.inputs, self.copied, self.outputs = program, inputs, copied, outputs
        self.fresh, self.name = fresh, name
        self.device = one_device(program, inputs, outputs)
        self.graphs = graphs_of(self.device)
        self.index = None if self.device is None else self.device.index
        self.static: list[Any] | None = None  # the owned input buffers (None where input i is static)
        self._static_tensors: list[Any] = []
        self.pool: Any = None
        self.graph: Any = None  # the captured graph handle
        self.captured_inputs: list[Any] | None = None  # what static inputs were at capture
        self.static_outputs: tuple | None = None
        self.checks: list = []  # value checks the captured calls queue on the device, submitted after each replay
        self.runs = 0
        self.generation = 0  # replays of the captured graph: kept outputs belong to the latest
        self.strict = True  # a static input that changed: GuardMiss (capture again); else run without the graph
        self.failures: list[str] = []  # why a capture failed: the program runs without a graph from then on
        self.note = None  # why no graph is tried at all
        if self.graphs is None:
            self.note = "its values are on more than one device" if self.device is None else \
                f"the {self.device.type} backend has no device graphs (the program replays op by op)"

    @property
    def captured(self) -> bool:
        return self.graph is not None

    # -- the plan ----------------------------------------------------------------------------
    def _allocate(self, natives: tuple) -> None:
        """The owned input buffers, from the private pool where there is one."""
        from ..dispatch.ops import F
        if self.graphs is not None:
            self.pool = self.graphs.new_pool(self.index)
        wrap = links.tensor.wrap
        static: list[Any] = []
        with self._pool_context(), links.recorder.no_grad():
            for value, copied, native in zip(self.inputs, self.copied, natives):
                if copied:
                    t = F.empty(tuple(native.shape), dtype=value.dtype, device=value.device)
                    static.append(t._data)
                    self._static_tensors.append(t)
                else:
                    static.append(None)
                    self._static_tensors.append(None)
        self.static = static
        self._wrap = wrap

    def _pool_context(self):
        if self.graphs is None or self.pool is None:
            from contextlib import nullcontext
            return nullcontext()
        return self.graphs.allocating_from(self.index, self.pool)

    def _fill(self, natives: tuple) -> list:
        """The natives the program reads: copied inputs copied into their buffers (on the current stream)."""
        wrap = self._wrap
        out = []
        with links.recorder.no_grad():
            for value, target, t, native in zip(self.inputs, self.static, self._static_tensors, natives):
                if target is None:
                    out.append(native)
                    continue
                if native is not target:
                    t.copy_(wrap(native, value.dtype, value.device))
                out.append(target)
        return out

    def write_back(self, natives: tuple, written: list[int]) -> None:
        """Copy owned buffers of inputs the program wrote in place back into the caller's arrays."""
        wrap = self._wrap
        with links.recorder.no_grad():
            for i in written:
                value = self.inputs[i]
                if self.static[i] is not None and natives[i] is not self.static[i]:
                    wrap(natives[i], value.dtype, value.device).copy_(self._static_tensors[i])

    def _fresh_copies(self, outputs: tuple) -> tuple:
        wrap = self._wrap
        with links.recorder.no_grad():
            head = tuple(wrap(n, v.dtype, v.device).clone()._data
                         for v, n in zip(self.outputs[:self.fresh], outputs[:self.fresh]))
        return head + tuple(outputs[self.fresh:])

    # -- running -----------------------------------------------------------------------------
    def run(self, *natives, tensors=None) -> tuple:
        if self.static is None:
            self._allocate(natives)
        if self.graph is not None:
            return self._replay(natives)
        filled = self._fill(natives)
        self.runs += 1
        if self.graphs is None or self.failures:
            return self.program.run(*filled)
        if self.runs <= config.cudagraph_warmups:  # in the pool: its blocks are cached when the capture comes
            def warm_up():
                with self.graphs.allocating_from(self.index, self.pool):
                    return self.program.run(*filled)
            return self._on_side_stream(warm_up)
        return self._capture(filled, natives)

    def _replay(self, natives: tuple) -> tuple:
        for i, (native, then) in enumerate(zip(natives, self.captured_inputs)):
            if then is not None and native is not then:
                if self.strict:
                    raise GuardMiss(f"{self.name}: input {i} is no longer the array its device graph was captured with")
                return self.program.run(*self._fill(natives))
        self._fill(natives)
        self._replay_graph()
        self.runs += 1
        return self._fresh_copies(self.static_outputs)

    def _replay_graph(self) -> None:
        self.graphs.replay(self.index, self.graph)
        self.generation += 1
        if self.checks:
            deferred_checks.resubmit(self.checks)

    def _capture(self, filled: list, natives: tuple) -> tuple:
        graphs, index = self.graphs, self.index

        def record():
            graphs.begin_capture(index, self.pool, config.cudagraph_capture_error_mode)
            try:
                with graphs.allocating_from(index, self.pool), deferred_checks.recording() as checks:
                    outputs = self.program.run(*filled)
            except BaseException:
                graphs.abort_capture(index)
                raise
            self.checks = checks
            return outputs, graphs.end_capture(index)
        try:
            outputs, graph = self._on_side_stream(record)
        except Exception as exc:  # noqa: BLE001  the program still runs, without a graph
            reason = f"capturing a device graph failed ({type(exc).__name__}: {exc})"
            log.warning("ember.compile(mode='reduce-overhead'): %s: %s; it runs op by op from now on",
                        self.name, reason)
            self.failures.append(reason)
            return self.program.run(*filled)
        self.graph, self.static_outputs = graph, tuple(outputs)
        self.captured_inputs = [n if s is None else None for n, s in zip(natives, self.static)]
        self._replay_graph()  # capturing ran nothing: this call's results come from the first replay
        return self._fresh_copies(self.static_outputs)

    def _on_side_stream(self, work):
        """``work()`` on a non-default stream ordered after the current one, and the current one after it
        (CUDA refuses to capture the legacy default stream; warm-up runs there too, as PyTorch's do)."""
        runtime = registry.get_backend(self.device.type).device_runtime()
        index = self.index
        current = runtime.current_stream(index)
        side = getattr(self, "_side", None)
        if side is None:
            side = self._side = runtime.new_stream(index, 0)
        before = runtime.new_event(index, False, False, False)
        runtime.record_event(index, before, current)
        runtime.stream_wait_event(index, side, before)
        runtime.set_current_stream(index, side)
        try:
            return work()
        finally:
            runtime.set_current_stream(index, current)
            after = runtime.new_event(index, False, False, False)
            runtime.record_event(index, after, side)
            runtime.stream_wait_event(index, current, after)

    def allocations(self) -> int | None:
        """Allocations the private pool has served (None without one): unchanged by replays."""
        return None if self.pool is None else self.graphs.pool_allocations(self.pool)


__all__ = ["DeviceGraph", "graphs_of", "one_device"]
