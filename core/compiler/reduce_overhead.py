"""``mode="reduce-overhead"``: entries whose programs run through a static memory plan and a device graph.

``replayed(entry)`` turns a captured entry into one whose programs are ``DeviceGraph``s (``device_graph.py``),
unless the program does something a device graph cannot replay; then the entry stays as the default mode
runs it, and ``cudagraph_skips`` says why (``explain`` shows these as graph break reasons):
- a call checked on the host at every replay (an index range check that reads values, on a backend that
  captures graphs but does not defer value checks to the device: it would have to synchronise while
  capturing), or a call that runs on the CPU fallback;
- a function that runs eagerly at every call (``optimizer.step()``), unless its optimizer says it is graph
  safe (``Optimizer._graph_safe()``: its step counts live on the device), so its launches may be captured;
  an optimizer on a backend that captures graphs, graph safe but for host step counts, is switched to
  ``capturable`` first, as PyTorch's compiler does.
Host reads of values (``.item()``) already break the capture itself, in every mode.
"""
from __future__ import annotations

from .capture import at_path
from ..dispatch.contract import registry
from .device_graph import DeviceGraph, graphs_of
from .differentiable import attach
from .entry import DifferentiableEntry, PlainEntry, _results
from .graph import Graph, OpaqueCall, OpNode

_STATIC_RESULT = ("ember.compile(mode='reduce-overhead'): this backward reads activations that a later call of "
                  "the same compiled region has overwritten (its device graph keeps them in one static pool, as "
                  "PyTorch's CUDA graphs do); call backward() before calling the region again, or compile it "
                  "with the default mode")


def blockers(graph: Graph) -> list[str]:
    """Why ``graph`` cannot be replayed as a device graph (empty when it can)."""
    reasons: list[str] = []
    for step in graph.steps:
        if isinstance(step, OpNode) and step.checked:
            if step.plan.kind == "fallback":
                why = f"{step.op.name} runs on the CPU fallback (a round trip through host memory)"
            elif _checks_stay_on_device(step.plan.device):
                continue  # replayed with the graph; the graph queues its checks again after each replay
            else:
                why = f"{step.op.name} checks its operands' values on the host at every call"
        elif isinstance(step, OpaqueCall):
            owner = step.args[0] if step.args else None
            graph_safe = getattr(owner, "_graph_safe", None)
            if callable(graph_safe) and (graph_safe() or _made_capturable(owner)):
                continue
            why = f"{step.name} runs eagerly at every call" + (
                f" and {type(owner).__name__} is not graph safe ({type(owner).__name__}._graph_safe() is False, or "
                f"missing: a capturable multi-tensor step whose state exists is)"
                if graph_safe is not None or hasattr(owner, "param_groups") else "")
        else:
            continue
        reason = f"cudagraphs: {why}"
        if reason not in reasons:
            reasons.append(reason)
    return reasons


def _checks_stay_on_device(device) -> bool:
    """Whether value checks on ``device`` can be part of a device graph: its backend captures none (the program
    runs as Python, checks and all), or it queues checks on the device (``Backend.defers_value_checks``)."""
    return graphs_of(device) is None or registry.get_backend(device.type).defers_value_checks


def _made_capturable(optimizer) -> bool:
    """Whether ``optimizer`` was graph safe but for its step counts on the host, and keeps them on the device now:
    done only where every parameter's backend captures graphs (PyTorch's compiler turns ``capturable`` on for
    optimizers whose steps go into CUDA graphs likewise); elsewhere the step runs eagerly, as it is."""
    make = getattr(optimizer, "_make_capturable", None)
    params = [p for group in getattr(optimizer, "param_groups", ()) for p in group["params"]]
    if make is None or not params or any(graphs_of(p.device) is None for p in params):
        return False
    return make()


def replayed(entry):
    """``entry`` for ``mode="reduce-overhead"``: its programs through device graphs, or itself with the reasons
    it cannot be in ``cudagraph_skips``."""
    reasons = blockers(entry.graph)
    if reasons:
        entry.cudagraph_skips = reasons
        return entry
    if entry.differentiable:
        return ReplayedDifferentiableEntry(entry)
    return ReplayedPlainEntry(entry)


def _written(graph: Graph, inputs: list) -> list[int]:
    """Positions of inputs that steps write in place (copied ones go back to the caller after each run)."""
    slots = {v.slot for s in graph.steps if isinstance(s, OpNode) and s.op.mutates for v in s.outputs}
    return [k for k, i in enumerate(inputs) if i.value.slot in slots]


class _Replayed:
    """What both kinds share: the captured graph's inputs, how each is placed, and the skip reasons."""

    def _setup(self, entry) -> None:
        self.entry = entry
        self.graph = entry.graph
        self.inputs = entry.inputs
        self.result_values = entry.result_values
        self.returns_inputs = entry.returns_inputs
        self.copied = [i.kind != "object" for i in entry.graph.inputs]  # arguments and entry gradients
        self.written = _written(entry.graph, entry.graph.inputs)
        self.programs = entry.programs

    @property
    def cudagraph_skips(self) -> list[str]:
        """Why a program of this entry runs without its device graph after all (a capture that failed)."""
        return [f"cudagraphs: {r}" for g in self.device_graphs for r in g.failures]

    @property
    def cudagraph_notes(self) -> list[str]:
        """Why no device graph is tried where none is (a backend without them): not a fallback."""
        return sorted({f"cudagraphs: {g.note}" for g in self.device_graphs if g.note})

    def _run_forward(self, device_graph: DeviceGraph, args: tuple, kwargs: dict) -> tuple:
        natives = self.inputs.read(args, kwargs)
        outputs = device_graph.run(*natives)
        if self.written:
            device_graph.write_back(natives, self.written)
        self.inputs.bump_versions(args, kwargs)
        return outputs


class ReplayedPlainEntry(_Replayed):
    """A ``PlainEntry`` (built with ``keep_grads``) through one device graph. After a replay the gradients the
    program put in ``.grad`` are put there again: a graph replays no Python."""

    differentiable = False

    def __init__(self, entry: PlainEntry) -> None:
        self._setup(entry)
        outputs = entry.result_values + entry.kept
        self.program = DeviceGraph(entry.program, entry.inputs.values, self.copied, outputs, len(entry.result_values),
                                   "compiled program")
        self.device_graphs = [self.program]
        self._grad_tensors: dict[int, object] = {}

    def __call__(self, args: tuple, kwargs: dict):
        outputs = self._run_forward(self.program, args, kwargs)
        by_slot = {v.slot: n for v, n in zip(self.result_values, outputs)}
        if self.program.captured:
            self._put_grads(by_slot, outputs)
        given = self.inputs.tensors(args, kwargs) if self.returns_inputs else {}
        return _results(self.graph.result, by_slot, given)[0]

    def _put_grads(self, by_slot: dict, outputs: tuple) -> None:
        from ..dispatch.execution import links
        static = dict(zip((v.slot for v in self.program.outputs), self.program.static_outputs))
        for effect in self.entry.grad_effects:
            value = effect.value
            if value is None:
                effect.leaf.grad = None
                continue
            native = static[value.slot] if value.slot in static else by_slot[value.slot]
            tensor = self._grad_tensors.get(value.slot)
            if tensor is None or tensor._data is not native:
                tensor = self._grad_tensors[value.slot] = links.tensor.wrap(native, value.dtype, value.device)
            if effect.leaf.grad is not tensor:
                effect.leaf.grad = tensor


class _BackwardOfCall:
    """The backward program of one call, refusing to run once a later call has overwritten what it reads."""

    __slots__ = ("backward", "forward", "generation")

    def __init__(self, backward: DeviceGraph, forward: DeviceGraph) -> None:
        self.backward, self.forward, self.generation = backward, forward, forward.generation

    def run(self, *natives):
        if self.forward.captured and self.forward.generation != self.generation:
            raise RuntimeError(_STATIC_RESULT)
        return self.backward.run(*natives)


class ReplayedDifferentiableEntry(_Replayed):
    """A ``DifferentiableEntry`` whose forward and backward are device graphs; the backward reads the values the
    forward saved where the forward's graph keeps them."""

    differentiable = True

    def __init__(self, entry: DifferentiableEntry) -> None:
        self._setup(entry)
        saved = entry.saved_values
        self.forward = DeviceGraph(entry.forward, entry.inputs.values, self.copied, entry.result_values + saved,
                                   len(entry.result_values), "compiled forward")
        self.backward = DeviceGraph(entry.backward, entry.grad_outputs + saved,
                                    [True] * len(entry.grad_outputs) + [False] * len(saved), entry.grad_values,
                                    len(entry.grad_values), "compiled backward")
        self.backward.strict = False  # saved values that are not the forward graph's own: run without the graph
        self.device_graphs = [self.forward, self.backward]

    def __call__(self, args: tuple, kwargs: dict):
        entry = self.entry
        outputs = self._run_forward(self.forward, args, kwargs)
        count = len(self.result_values)
        by_slot = {v.slot: n for v, n in zip(self.result_values, outputs[:count])}
        result, made = _results(self.graph.result, by_slot, self.inputs.tensors(args, kwargs)
                                if self.returns_inputs else {})
        leaf_tensors = [i.where if i.kind == "object" else at_path((args, kwargs), i.where) for i in entry.leaf_inputs]
        attach([made[v.slot] for v in entry.differentiable_values], leaf_tensors,
               _BackwardOfCall(self.backward, self.forward), tuple(outputs[count:]), entry.grad_positions)
        return result


__all__ = ["replayed", "blockers", "ReplayedPlainEntry", "ReplayedDifferentiableEntry"]
