"""Programs: captured steps turned into one generated Python function over native arrays.

Each op call becomes one line calling its kernel with the arguments its plan prepared at capture (casts,
moves and Python numbers settled once), so a replay does no validation, no dispatch lookup and no
autograd recording, and makes no tensor objects between ops. Each value is a local variable, deleted
right after its last use, so that its buffer goes back to the allocator for the next op (the buffer plan).
Calls that validate operand values on every call (index range checks), calls that run eagerly
(``optimizer.step()``) and gradient assignments go through small helpers with real tensors.
"""
from __future__ import annotations

import itertools
from typing import Any

from ..dispatch.execution import dispatcher, links
from ..dispatch.execution.arguments import Native, Natives, Number, constant_arguments, generator_native
from .fuse import FusedNode, fuse
from .graph import GradEffect, OpaqueCall, OpNode, Value, rebuild

_names = itertools.count()


class Program:
    """``run(*natives, tensors=None)`` executes ``steps`` on the natives of ``inputs`` and returns those of
    ``outputs``; ``tensors`` (slot -> the caller's tensor) lets calls checked at replay see the tensors
    themselves.

    ``refresh`` maps slots of tensors read as they are (parameters) to those tensors: after a call that ran
    eagerly they are read again, since it may have replaced their storage."""

    def __init__(self, steps: list, inputs: list[Value], outputs: list[Value], refresh: dict | None = None,
                 fusion: bool = True) -> None:
        self.steps_captured = [s for s in steps if isinstance(s, OpNode)]
        self.ops_captured = len(self.steps_captured)
        uses: dict[int, list] = {}
        for step in steps:
            for v in step.operands():
                uses.setdefault(v.slot, []).append(step)
        exported = {v.slot for v in outputs}
        self.steps = fuse(steps, uses, exported) if fusion else list(steps)
        self.kernels = sum(isinstance(s, (OpNode, FusedNode)) for s in self.steps)
        self.fused_groups = sum(isinstance(s, FusedNode) for s in self.steps)
        self.fused_ops = sum(len(s.members) for s in self.steps if isinstance(s, FusedNode))
        self.eager_calls = sum(isinstance(s, OpaqueCall) for s in self.steps)
        self.checks = sum(isinstance(s, OpNode) and s.checked for s in self.steps)  # calls checked at replay
        self.source, self.run = _generate(self.steps, inputs, outputs, refresh or {})

    def __repr__(self) -> str:
        return (f"<Program ops={self.ops_captured} kernels={self.kernels} fused_groups={self.fused_groups} "
                f"eager_calls={self.eager_calls}>")


class _Writer:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {}
        self.lines: list[str] = []

    def constant(self, obj) -> str:
        name = f"c{len(self.namespace)}"
        self.namespace[name] = obj
        return name


def _name(v: Value) -> str:
    return f"v{v.slot}"


def _generate(steps: list, inputs: list[Value], outputs: list[Value], refresh: dict):
    w = _Writer()
    last_use: dict[int, int] = {}
    for at, step in enumerate(steps):
        for v in step.operands():
            last_use[v.slot] = at
    kept = {v.slot for v in outputs} | set(refresh)
    for at, step in enumerate(steps):
        if isinstance(step, OpNode) and not step.checked:
            _kernel_line(w, step)
        elif isinstance(step, (OpNode, FusedNode, OpaqueCall)):
            checked = isinstance(step, OpNode)
            runner = (_checked_runner(step) if checked else
                      step.kernel if isinstance(step, FusedNode) else _opaque_runner(step))
            made = step.outputs if not isinstance(step, OpaqueCall) else [v for _, v in step.outputs]
            if checked and step.op.mutates:
                made = []
            target = f"{', '.join(map(_name, made))}, = " if made else ""
            operands = ", ".join(["tensors"] * checked + [_name(v) for v in step.operands()])
            w.lines.append(f"{target}{w.constant(runner)}({operands})")
            if isinstance(step, OpaqueCall):
                for slot, tensor in refresh.items():
                    if last_use.get(slot, -1) > at:
                        w.lines.append(f"v{slot} = {w.constant(tensor)}._data")
        elif isinstance(step, GradEffect):
            value = "None" if step.value is None else f"{w.constant(_wrapper(step.value))}({_name(step.value)})"
            w.lines.append(f"{w.constant(step.leaf)}.grad = {value}")
        dead = sorted({v.slot for v in step.operands() if last_use[v.slot] == at and v.slot not in kept})
        if dead:
            w.lines.append(f"del {', '.join(f'v{s}' for s in dead)}")
    w.lines.append(f"return ({''.join(_name(v) + ', ' for v in outputs)})")
    name = f"compiled_program_{next(_names)}"
    body = "\n    ".join(w.lines)
    source = f"def {name}({''.join(_name(v) + ', ' for v in inputs)}tensors=None):\n    {body}\n"
    exec(compile(source, f"<ember.compile {name}>", "exec"), w.namespace)  # noqa: S102  generated above
    return source, w.namespace[name]


def _kernel_line(w: _Writer, node: OpNode) -> None:
    """The kernel call of ``node``: its plan's argument recipe (``execution/arguments.py``), rendered as the
    executor follows it per call, with the conversions of traced operands written out as calls."""
    plan, op = node.plan, node.op
    recipe = dict(plan.arguments)
    constants = dict(constant_arguments(plan))
    generator_at = op.special_positions[1]
    args = []
    for i, value in enumerate(node.values):
        how = recipe.get(i)
        if i in constants:
            args.append(w.constant(constants[i]))
        elif i == generator_at:
            backend, device = plan.backend, plan.device
            args.append(f"{w.constant(lambda g=value: generator_native(backend, device, g))}()")
        elif isinstance(value, Value):
            args.append(_operand(w, value, how))
        elif isinstance(value, list) and isinstance(how, Natives):
            args.append(f"[{', '.join(_operand(w, x, how.one) if isinstance(x, Value) else 'None' for x in value)}]")
        elif isinstance(how, Number):
            args.append(w.constant(how(value)))
        else:  # PASS, and attributes
            args.append(w.constant(value))
    call = f"{w.constant(plan.impl)}({', '.join(args)})"
    if op.mutates:
        w.lines.append(call)
    elif len(node.outputs) == 1 and not (len(op.outputs) > 1 or op.outputs == ("*",)):
        w.lines.append(f"{_name(node.outputs[0])} = {call}")
    else:
        w.lines.append(f"{', '.join(map(_name, node.outputs))}, = {call}")


def _operand(w: _Writer, v: Value, how) -> str:
    """A traced operand as the recipe has it: its native as it is (``DATA``), or moved and cast (``Native``)."""
    if not isinstance(how, Native):
        return _name(v)
    return f"{w.constant(lambda native, d=v.dtype, s=v.device: how.native(native, d, s))}({_name(v)})"


def _wrapper(v: Value):
    wrap, dtype, device = links.tensor.wrap, v.dtype, v.device
    return lambda native: wrap(native, dtype, device)


def _tensors(template, operands: list[Value], natives: tuple, given: dict | None = None):
    """``template`` with each ``Value`` replaced by a tensor over its native: the caller's own tensor where
    ``given`` (slot -> tensor) has it and it still holds that native."""
    wrap = links.tensor.wrap
    by_slot = {v.slot: (v, n) for v, n in zip(operands, natives)}

    def tensor(x):
        if isinstance(x, Value):
            v, native = by_slot[x.slot]
            own = given.get(x.slot) if given else None
            return own if own is not None and own._data is native else wrap(native, v.dtype, v.device)
        return x
    return rebuild(template, tensor)


def _checked_runner(node: OpNode):
    """Run a call through the dispatcher, which checks its operands' values (and raises the usual errors).
    Operands that are the caller's tensors go as themselves, so that checks remembered for them hold."""
    operands, op, no_grad = node.operands(), node.op, links.recorder.no_grad

    def run_checked(given, *natives):
        values = _tensors(node.values, operands, natives, given)
        with no_grad():
            result = dispatcher.call(op, tuple(values), {})
        if result is None:  # an op writing into lists of tensors (_foreach_mul_ ...) returns nothing
            return ()
        return tuple(t._data for t in (result if isinstance(result, tuple) else (result,)))
    return run_checked


def _opaque_runner(call: OpaqueCall):
    operands = call.operands()
    from .capture import at_path

    def run_eagerly(*natives):
        args = _tensors(call.args, operands, natives)
        kwargs = _tensors(call.kwargs, operands, natives)
        result = call.function(*args, **kwargs)
        return tuple(at_path(result, path)._data for path, _ in call.outputs)
    return run_eagerly


__all__ = ["Program"]
