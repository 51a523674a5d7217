"""Capture: run a program once, for real, and record it as a ``Graph`` of schema op calls.

The ``Tracer`` is a dispatch mode placed below every other mode (autocast's casts are recorded as the
casts they are). For each op call it asks the dispatcher which plan the call runs with nothing recording
(``dispatcher.resolve``): a kernel becomes one ``OpNode`` and the call runs as usual, its inner calls
unrecorded; a composite is not recorded itself, its inner calls come back to the tracer one by one.
The program's result is the real result: capturing is the first call.

What the graph cannot replay is noted as a break, with the user's source line: a read of tensor values
on the host (``item()``, ``bool(t)``, printing: Python then depends on data) or a device transfer.
Functions marked ``runs_eagerly`` (``optimizer.step()``) are recorded as ``OpaqueCall``s. Around them and
at the end, gradients that changed in ``leaf.grad`` are recorded as ``GradEffect``s.
"""
from __future__ import annotations

import os
import traceback
from typing import Any, Callable

from ..dispatch.execution import dispatcher, links, modes
from ..dispatch.execution.modes import DispatchMode
from . import state
from .graph import GradEffect, Graph, Input, OpaqueCall, OpNode, Value, leaves, rebuild

_EMBER_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_OWN_FOLDERS = tuple(os.path.join(_EMBER_ROOT, d) + os.sep for d in ("core", "backends", "conformance"))


class GraphBreak(RuntimeError):
    """Raised with ``fullgraph=True`` where the program cannot be captured whole (PyTorch's ``Unsupported``)."""


def user_line() -> str:
    """``file:line`` of the innermost frame outside Ember: where the user's program did it."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_OWN_FOLDERS + ("<formula of ",)) and "contextlib" not in frame.filename:
            return f"{frame.filename}:{frame.lineno} ({frame.line})"
    return "?"


class Tracer(DispatchMode):
    """Records the op calls of one run (see the module docstring)."""

    observes_nested = True

    def __init__(self, arg_paths: dict, leaves_of_interest: list, fullgraph: bool = False) -> None:
        self.graph = Graph()
        self.arg_paths = arg_paths  # id(tensor) -> path into the call's arguments
        self.fullgraph = fullgraph
        self.values: dict[int, Value] = {}  # id(tensor) -> value
        self.natives: dict[int, Value] = {}  # id(native array) -> value: a detached alias is the same value
        self.keep: list = []  # every tensor behind a value, so that no id is reused while capturing
        self.by_slot: dict[int, Any] = {}  # slot -> the first tensor seen for it
        self.depth = 0  # > 0 while a recorded op call runs: its inner calls and value reads are its own
        self.paused = 0  # > 0 while an opaque call runs
        self.grad_seen: dict[int, tuple] = {}  # id(leaf) -> (leaf, the .grad last seen)
        self.grad_owner: dict[int, Any] = {}  # id(gradient at entry) -> its leaf
        self.stale: set = set()  # ids of gradients an opaque call put in place: unreadable by the graph
        for leaf in leaves_of_interest:
            self._watch(leaf)

    # -- running under the tracer ----------------------------------------------------------
    def run(self, function: Callable, args: tuple, kwargs: dict, is_program: bool = True):
        """Call ``function`` under the tracer; returns its result and fills ``self.graph`` (its ``result``
        too where ``is_program``; a capture may run more than one function into one graph)."""
        if state.capturing is not None:
            raise RuntimeError("ember.compile: a capture is already running")
        state.capturing = self
        modes.active.insert(0, self)  # below every other mode: it records what finally runs
        dispatcher.value_read_hooks.append(self._host_work)
        try:
            result = function(*args, **kwargs)
            self._flush_grads()
            if is_program:
                self.graph.result = rebuild(result, self._as_value)
        finally:
            dispatcher.value_read_hooks.remove(self._host_work)
            modes.active.remove(self)
            state.capturing = None
        return result

    def __torch_dispatch__(self, func, types, args, kwargs=None):
        kwargs = kwargs or {}
        if self.depth or self.paused:
            return func(*args, **kwargs)
        op = func.op
        self.depth += 1
        try:
            try:
                plan, values = dispatcher.resolve(op, args, kwargs)
            except Exception:  # noqa: BLE001  the call itself raises the error, as it would uncompiled
                plan = values = None
            if plan is None or self.decomposes(op, plan, args, kwargs):
                self.depth -= 1  # its inner calls come back to the tracer
                try:
                    return func(*args, **kwargs)
                finally:
                    self.depth += 1
            template = [self._template(v) for v in values]
            result = func(*args, **kwargs)
        finally:
            self.depth -= 1
        checked = plan.validates_every_call or plan.kind == "fallback"
        if op.mutates:  # the values it writes into are its outputs
            targets = [template[i] for i in op.written_positions]
            outputs = tuple(targets) if all(isinstance(t, Value) for t in targets) else ()
            checked = checked or not outputs  # writes into a list of tensors: through the dispatcher
        else:
            outputs = tuple(self.new_value(t) for t in (result if isinstance(result, tuple) else (result,)))
        self.graph.steps.append(OpNode(plan, template, outputs, checked))
        return result

    def decomposes(self, op, plan, args: tuple, kwargs: dict) -> bool:
        """Whether this call's inner calls are recorded rather than the call (see ``_decomposes``)."""
        return _decomposes(op, plan, args, kwargs)

    def backward_node(self, node):
        self.graph.ran_backward = True
        return None

    # -- values ----------------------------------------------------------------------------
    def _template(self, v):
        Tensor = links.tensor.type
        if isinstance(v, Tensor):
            return self.value_of(v)
        if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
            return [self.value_of(x) if isinstance(x, Tensor) else x for x in v]
        return v

    def _as_value(self, x):
        return self.value_of(x) if isinstance(x, links.tensor.type) else x

    def value_of(self, t) -> Value:
        value = self.values.get(id(t))
        if value is not None:
            return value
        value = self.natives.get(id(t._data))
        if value is not None:  # a detached alias (``t.detach()``, ``t.data``) of a known value
            self._remember(t, value)
            return value
        if id(t) in self.stale:
            self._break("a gradient that an eagerly run function (optimizer step, scaler) replaced is read")
        if t.requires_grad and t.grad_fn is None:
            self._watch(t)
        value = self.new_value(t)
        path = self.arg_paths.get(id(t))
        if path is not None:
            self.graph.inputs.append(Input(value, "arg", path))
        elif id(t) in self.grad_owner:
            self.graph.inputs.append(Input(value, "grad", self.grad_owner[id(t)]))
        else:
            if t.grad_fn is not None:
                self._break(f"a tensor made outside the captured op calls (shape {tuple(t.shape)}, {t.dtype}) is read")
            self.graph.inputs.append(Input(value, "object", t))
        return value

    def new_value(self, t) -> Value:
        value = Value(self.graph.slots, tuple(t._data.shape), t._dtype, t._device)
        self.graph.slots += 1
        self._remember(t, value)
        return value

    def tensor_of(self, value: Value):
        """The captured tensor behind ``value``."""
        return self.by_slot[value.slot]

    def _remember(self, t, value: Value) -> None:
        self.by_slot.setdefault(value.slot, t)
        self.values[id(t)] = value
        self.natives.setdefault(id(t._data), value)
        self.keep.append(t)

    # -- gradients, opaque calls, breaks ---------------------------------------------------
    def _watch(self, leaf) -> None:
        if id(leaf) not in self.grad_seen:
            grad = leaf.grad
            self.grad_seen[id(leaf)] = (leaf, grad)
            if grad is not None:
                self.grad_owner[id(grad)] = leaf
            self.keep.append(leaf)

    def _flush_grads(self) -> None:
        """Record every ``leaf.grad`` that changed since it was last seen."""
        for key, (leaf, seen) in list(self.grad_seen.items()):
            now = leaf.grad
            if now is not seen:
                self.graph.steps.append(GradEffect(leaf, None if now is None else self.value_of(now)))
                self.grad_seen[key] = (leaf, now)

    def opaque(self, function: Callable, args: tuple, kwargs: dict):
        """Run a ``runs_eagerly`` function and record it as an ``OpaqueCall``."""
        self._flush_grads()
        call = OpaqueCall(function, rebuild(args, self._as_value), rebuild(kwargs, self._as_value),
                          getattr(function, "__qualname__", repr(function)))
        self.graph.steps.append(call)
        self.paused += 1
        try:
            result = function(*args, **kwargs)
        finally:
            self.paused -= 1
        for key, (leaf, seen) in list(self.grad_seen.items()):
            if leaf.grad is not seen:  # replaced inside the call: not a value the graph knows
                self.grad_seen[key] = (leaf, leaf.grad)
                if leaf.grad is not None:
                    self.stale.add(id(leaf.grad))
                    self.keep.append(leaf.grad)
        Tensor = links.tensor.type
        for path, item in _paths(result):
            if isinstance(item, Tensor):
                call.outputs.append((path, self.new_value(item)))
        return result

    def _host_work(self, what: str) -> None:
        if self.depth or self.paused:
            return  # an op's own validation, or an eagerly run function
        self._break(what)

    def _break(self, what: str) -> None:
        reason = f"{what} at {user_line()}"
        self.graph.breaks.append(reason)
        if self.graph.steps:
            self.graph.steps[-1]._break_after = True
        if self.fullgraph:
            raise GraphBreak(f"ember.compile(fullgraph=True): the program cannot be captured whole: {reason}")


def _decomposes(op, plan, args: tuple, kwargs: dict) -> bool:
    """Whether the tracer records a call's inner calls rather than the call: a composite, unless its checks
    read operand values (it then runs through the dispatcher at replay, checks included), and any op that
    autograd records op by op here (a composite without a derivative of its own: its inner results are
    what the backward reads, so they must be values of the graph)."""
    if plan.kind == "composite" and not plan.validates_every_call:
        return True
    if op.kind == "composite" and op.derivative is None and links.recorder.state.enabled:
        return any(t.requires_grad for t in modes.tensors_in(args, kwargs))
    return False


def _paths(tree, prefix=()) -> list:
    """(path, leaf) pairs of nested tuples, lists and dicts."""
    if isinstance(tree, (list, tuple)):
        return [pair for i, item in enumerate(tree) for pair in _paths(item, (*prefix, i))]
    if isinstance(tree, dict):
        return [pair for k, item in tree.items() for pair in _paths(item, (*prefix, k))]
    return [(prefix, tree)]


def arg_paths(args: tuple, kwargs: dict) -> dict:
    """id(tensor) -> its path in ``(args, kwargs)``, for every tensor among the call's arguments."""
    Tensor = links.tensor.type
    return {id(t): path for path, t in _paths((args, kwargs)) if isinstance(t, Tensor)}


def at_path(tree, path):
    for key in path:
        tree = tree[key]
    return tree


__all__ = ["Tracer", "GraphBreak", "arg_paths", "at_path", "user_line", "leaves"]
