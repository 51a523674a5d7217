"""Entries: one captured program, ready to replay for calls that pass the same guards.

``capture_entry`` runs the first call under the tracer and builds its entry:
- ``PlainEntry``: the program with nothing to differentiate (inference, or a whole training step whose
  ``backward()`` ran inside and whose gradients reach ``.grad`` as effects);
- ``DifferentiableEntry``: a forward whose outputs autograd will differentiate later; its backward is
  captured right away and both run as programs behind one ``CompiledBackward`` node.
"""
from __future__ import annotations

import time

from ..dispatch.execution import links
from .capture import Tracer, arg_paths, at_path
from .differentiable import attach, boundaries_cut, boundary
from .graph import GradEffect, Graph, Input, OpaqueCall, OpNode, Value, leaves, rebuild
from .program import Program


class GuardMiss(Exception):
    """A tensor the program reads no longer matches what was captured: capture again."""


class _Inputs:
    """How each input value is read at replay, and which tensors the program writes in place."""

    def __init__(self, inputs: list[Input], steps: list) -> None:
        self.inputs = inputs
        self.values = [i.value for i in inputs]
        self.objects = {i.value.slot: i.where for i in inputs if i.kind == "object"}
        written = {v.slot for step in steps if isinstance(step, OpNode) and step.op.mutates for v in step.outputs}
        self.written = [i for i in inputs if i.value.slot in written and i.kind in ("object", "arg")]

    def read(self, args: tuple, kwargs: dict) -> list:
        natives = []
        for i in self.inputs:
            kind = i.kind
            t = i.where if kind == "object" else at_path((args, kwargs), i.where) if kind == "arg" else i.where.grad
            if t is None or t._data.shape != i.value.shape or t._dtype is not i.value.dtype:
                raise GuardMiss(f"{kind} input changed")
            natives.append(t._data)
        return natives

    def tensors(self, args: tuple, kwargs: dict) -> dict:
        """slot -> the tensor an input value is, for results that return an input itself."""
        return {i.value.slot: (i.where if i.kind == "object" else at_path((args, kwargs), i.where)
                               if i.kind == "arg" else i.where.grad) for i in self.inputs}

    def bump_versions(self, args: tuple, kwargs: dict) -> None:
        for i in self.written:
            t = i.where if i.kind == "object" else at_path((args, kwargs), i.where)
            t._version[0] += 1


def _results(template, natives: dict, given: dict):
    """The result with each ``Value`` as a tensor: an input as itself, a computed value wrapped once."""
    wrap = links.tensor.wrap
    made: dict[int, object] = {}

    def tensor(x):
        if not isinstance(x, Value):
            return x
        t = made.get(x.slot)
        if t is None:
            t = given.get(x.slot)
            if t is None:
                t = wrap(natives[x.slot], x.dtype, x.device)
            made[x.slot] = t
        return t
    return rebuild(template, tensor), made


class PlainEntry:
    """A program replayed with nothing recorded for autograd."""

    differentiable = False

    def __init__(self, graph: Graph, fusion: bool, keep_grads: bool = False) -> None:
        self.graph = graph
        self.inputs = _Inputs(graph.inputs, graph.steps)
        self.result_values = _distinct([v for v in leaves(graph.result) if isinstance(v, Value)])
        self.returns_inputs = _returns_inputs(graph, self.result_values)
        effects: dict[int, GradEffect] = {}
        for step in graph.steps:
            if isinstance(step, GradEffect):
                effects[id(step.leaf)] = step
        self.grad_effects = list(effects.values())  # the last gradient put in each leaf's ``.grad``
        taken = {v.slot for v in self.result_values}
        # where a device graph replays the program, the gradients it leaves in ``.grad`` are outputs too
        self.kept = _distinct([e.value for e in self.grad_effects if e.value is not None and e.value.slot not in taken]
                              ) if keep_grads else []
        self.program = Program(graph.steps, self.inputs.values, self.result_values + self.kept, self.inputs.objects,
                               fusion)
        self.programs = [self.program]

    def __call__(self, args: tuple, kwargs: dict):
        natives = self.inputs.read(args, kwargs)
        outputs = self.program.run(*natives, tensors=self.inputs.tensors(args, kwargs) if self.program.checks else None)
        self.inputs.bump_versions(args, kwargs)
        by_slot = {v.slot: n for v, n in zip(self.result_values, outputs)}
        given = self.inputs.tensors(args, kwargs) if self.returns_inputs else {}
        return _results(self.graph.result, by_slot, given)[0]


def _returns_inputs(graph: Graph, results: list[Value]) -> bool:
    """Whether the result holds an input itself (returned as the caller's tensor, not a new one)."""
    slots = {i.value.slot for i in graph.inputs}
    return any(v.slot in slots for v in results)


class DifferentiableEntry:
    """A forward program and its backward program behind one autograd node per call."""

    differentiable = True

    def __init__(self, graph: Graph, forward_steps: list, backward_steps: list, grad_outputs: list[Value],
                 leaf_inputs: list[Input], grads: list, differentiable_values: list[Value], fusion: bool) -> None:
        self.graph = graph
        self.inputs = _Inputs(graph.inputs, forward_steps)
        self.result_values = _distinct([v for v in leaves(graph.result) if isinstance(v, Value)])
        self.returns_inputs = _returns_inputs(graph, self.result_values)
        produced = {v.slot for s in backward_steps for v in _made(s)} | {v.slot for v in grad_outputs}
        saved = _distinct([v for s in backward_steps for v in s.operands() if v.slot not in produced])
        saved += [g for g in grads if g is not None and g.slot not in produced and g not in saved]
        self.saved_count = len(saved)
        self.saved_values, self.grad_outputs = saved, grad_outputs  # for device-graph replay
        self.grad_values = [g for g in grads if g is not None]
        self.forward = Program(forward_steps, self.inputs.values, self.result_values + saved, self.inputs.objects,
                               fusion)
        self.grad_positions = [k for k, g in enumerate(grads) if g is not None]
        self.backward = Program(backward_steps, grad_outputs + saved, [g for g in grads if g is not None],
                                None, fusion)
        self.programs = [self.forward, self.backward]
        self.leaf_inputs = leaf_inputs
        self.differentiable_values = differentiable_values

    def __call__(self, args: tuple, kwargs: dict):
        natives = self.inputs.read(args, kwargs)
        outputs = self.forward.run(*natives, tensors=self.inputs.tensors(args, kwargs) if self.forward.checks else None)
        self.inputs.bump_versions(args, kwargs)
        count = len(self.result_values)
        by_slot = {v.slot: n for v, n in zip(self.result_values, outputs[:count])}
        result, made = _results(self.graph.result, by_slot, self.inputs.tensors(args, kwargs)
                                if self.returns_inputs else {})
        leaf_tensors = [i.where if i.kind == "object" else at_path((args, kwargs), i.where) for i in self.leaf_inputs]
        attach([made[v.slot] for v in self.differentiable_values], leaf_tensors, self.backward,
               tuple(outputs[count:]), self.grad_positions)
        return result


def _made(step) -> list:
    if isinstance(step, OpaqueCall):
        return [v for _, v in step.outputs]
    return list(step.outputs)


def _distinct(values: list[Value]) -> list[Value]:
    seen, out = set(), []
    for v in values:
        if v.slot not in seen:
            seen.add(v.slot)
            out.append(v)
    return out


def capture_entry(function, args: tuple, kwargs: dict, watched: list, fullgraph: bool, fusion: bool,
                  keep_grads: bool = False):
    """Run the call under the tracer. Returns ``(result, entry or None, graph, seconds)``: no entry where the
    program broke (``graph.breaks`` says why). The result is the call's real result in every case.
    ``keep_grads``: the program also returns the gradients it puts in ``.grad`` (for device-graph replay)."""
    started = time.perf_counter()
    Tensor = links.tensor.type
    grad_on = links.recorder.state.enabled
    if grad_on:  # arguments with a history enter through a boundary, where the backward capture stops
        args, kwargs = rebuild((args, kwargs), lambda x: boundary(x) if isinstance(x, Tensor)
                               and x.grad_fn is not None else x)
    tracer = Tracer(arg_paths(args, kwargs), watched, fullgraph)
    result = tracer.run(function, args, kwargs)
    graph = tracer.graph
    if graph.breaks:
        return result, None, graph, time.perf_counter() - started
    outputs = _distinct([v for v in leaves(graph.result) if isinstance(v, Value)])
    differentiable = [v for v in outputs if (t := tracer.tensor_of(v)).grad_fn is not None and t.requires_grad
                      and t._dtype.is_floating_point]
    if grad_on and differentiable and not graph.ran_backward:
        if any(isinstance(s, OpaqueCall) for s in graph.steps):
            graph.breaks.append("a function that runs eagerly (optimizer step) inside a region whose outputs are "
                                "differentiated later")
            return result, None, graph, time.perf_counter() - started
        entry = _capture_backward(tracer, differentiable, fullgraph, fusion)
    else:
        entry = PlainEntry(graph, fusion, keep_grads)
    return result, entry, graph, time.perf_counter() - started


def _capture_backward(tracer: Tracer, differentiable: list[Value], fullgraph: bool, fusion: bool):
    from ..autograd import grad as autograd_grad
    from ..dispatch.ops import F
    graph = tracer.graph
    mark = len(graph.steps)
    outputs = [tracer.tensor_of(v) for v in differentiable]
    with links.recorder.no_grad():
        seeds = [F.ones_like(t) for t in outputs]
    seed_values = [tracer.new_value(s) for s in seeds]
    leaf_inputs = [i for i in graph.inputs if tracer.tensor_of(i.value).requires_grad]
    leaf_tensors = [tracer.tensor_of(i.value) for i in leaf_inputs]
    ran_backward, result = graph.ran_backward, graph.result
    try:
        with boundaries_cut():
            grads = tracer.run(lambda: autograd_grad(outputs, leaf_tensors, seeds, retain_graph=True,
                                                     allow_unused=True), (), {}, is_program=False)
    finally:
        graph.ran_backward, graph.result = ran_backward, result
    if graph.breaks:
        return None
    grad_values = [None if g is None else tracer.value_of(g) for g in grads]
    return DifferentiableEntry(graph, graph.steps[:mark], graph.steps[mark:], seed_values, leaf_inputs,
                               grad_values, differentiable, fusion)


__all__ = ["PlainEntry", "DifferentiableEntry", "GuardMiss", "capture_entry"]
