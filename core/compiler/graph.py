"""What a capture records: values, the op calls between them, and the calls that stay eager.

A ``Value`` is one tensor of the captured program, by shape, dtype and device; at replay it is a native
array in a slot of the environment. Values enter from ``Input``s (an argument of the call, a tensor the
program reads as it is — a parameter, a buffer, a constant — or the gradient a leaf held at entry) or
are produced by ``OpNode``s (one schema op call with its prepared plan) and ``OpaqueCall``s (a function
that runs eagerly at replay too: ``optimizer.step()``, ``ember.compiler.disable``d functions).
``GradEffect``s put values into ``leaf.grad`` where the captured program did (``backward()`` inside a
compiled step).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(eq=False)
class Value:
    """One tensor of the program; ``slot`` is its place in the replay environment."""
    slot: int
    shape: tuple
    dtype: Any
    device: Any

    def __repr__(self) -> str:
        return f"%{self.slot}"


@dataclass(eq=False)
class Input:
    """Where a value comes from at replay: ``kind`` "arg" (``where`` is the path into the call's arguments),
    "object" (``where`` is the tensor itself, read when the replay starts) or "grad" (``where`` is a leaf
    tensor whose ``.grad`` is read)."""
    value: Value
    kind: str
    where: Any


@dataclass(eq=False)
class OpNode:
    """One op call: ``plan`` runs it without validation; ``values`` are its bound values with ``Value``s
    where tensors go (lists of them for list parameters); ``outputs`` the values it makes (the first operand
    itself for an in-place op); ``checked`` ops validate their operands' values on every call, so they run
    through the dispatcher at replay too (index range checks)."""
    plan: Any
    values: list
    outputs: tuple
    checked: bool = False

    @property
    def op(self):
        return self.plan.op

    def operands(self) -> list[Value]:
        found = []
        for v in self.values:
            for item in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(item, Value):
                    found.append(item)
        return found


@dataclass(eq=False)
class OpaqueCall:
    """A call that runs eagerly at replay as well: ``function(*args, **kwargs)`` with ``Value``s in the
    arguments replaced by tensors; ``outputs`` pairs each tensor of its result (by path) with a value."""
    function: Callable
    args: tuple
    kwargs: dict
    name: str
    outputs: list = field(default_factory=list)  # (path, Value)

    def operands(self) -> list[Value]:
        return [v for v in leaves(self.args) + leaves(self.kwargs) if isinstance(v, Value)]


@dataclass(eq=False)
class GradEffect:
    """``leaf.grad = value`` (a ``Value``, or None) at this point of the program."""
    leaf: Any
    value: Value | None

    def operands(self) -> list[Value]:
        return [self.value] if self.value is not None else []


def leaves(tree) -> list:
    """The leaves of nested tuples, lists and dicts, in order."""
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in leaves(item)]
    return [tree]


def rebuild(tree, replace: Callable):
    """``tree`` with every leaf ``x`` replaced by ``replace(x)``, keeping tuples (named ones too), lists, dicts."""
    if isinstance(tree, tuple):
        items = [rebuild(item, replace) for item in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    if isinstance(tree, list):
        return [rebuild(item, replace) for item in tree]
    if isinstance(tree, dict):
        return {k: rebuild(v, replace) for k, v in tree.items()}
    return replace(tree)


@dataclass(eq=False)
class Graph:
    """A captured program: its inputs, its steps in order, and its result with ``Value``s in place of tensors.
    ``breaks`` lists why it cannot be replayed (host reads of values...), empty when it can."""
    inputs: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    result: Any = None
    breaks: list = field(default_factory=list)
    slots: int = 0
    ran_backward: bool = False

    def op_count(self) -> int:
        return sum(isinstance(s, OpNode) for s in self.steps)


__all__ = ["Value", "Input", "OpNode", "OpaqueCall", "GradEffect", "Graph", "leaves", "rebuild"]
