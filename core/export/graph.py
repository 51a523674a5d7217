"""An exported program's graph, as plain data: what ``save`` writes, ``load`` reads and ``module()`` runs.

It is made from a capture (``ember.compiler.graph.Graph``) and its symbolic forms: every tensor is a slot
(``Ref``), every op call a ``Node`` naming its schema op and holding its bound values in parameter order (with
``Ref``s, ``SymbolicSize``s where a value follows a dynamic dimension, and ``PROGRAM_DEVICE`` where it named the
device the program ran on). Nothing in it refers to the Python objects of the capture, so it outlives the model
and its source.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..compiler.graph import Value, rebuild
from ..dispatch.execution import links
from ..dispatch.schema.defaults import get_default_device
from ..dispatch.schema.device import device as Device
from .dims import SymbolicSize


@dataclass(frozen=True)
class Ref:
    """A tensor of the program: its slot."""
    slot: int


class _ProgramDevice:
    """Stands for the device the program runs on (that of its inputs), where the capture named its own."""

    def __repr__(self) -> str:
        return "<program device>"


PROGRAM_DEVICE = _ProgramDevice()


@dataclass
class TensorMeta:
    """A value's shape (ints and ``SymbolicSize``s) and dtype name."""
    shape: tuple
    dtype: str


@dataclass
class Node:
    """One op call: ``target`` the schema op's name, ``args`` its bound values in parameter order, ``outputs`` the
    slots it defines (the first operand's own for an op that writes into it); ``scope`` the module path and
    ``line`` the user's source line that made it."""
    name: str
    target: str
    args: list
    outputs: tuple
    scope: str = ""
    line: str = ""
    op: str = "call_function"  # as torch.fx's nodes say it


@dataclass
class Placeholder:
    """A tensor input of the program: ``kind`` "user_input" (``path`` into ``(args, kwargs)``), "parameter",
    "buffer" or "constant" (``target``: its name in the state or the constants)."""
    name: str
    slot: int
    kind: str
    target: str | None = None
    path: tuple | None = None
    persistent: bool = True


@dataclass
class ProgramGraph:
    """Placeholders, nodes in order, each slot's meta and name, and the result with ``Ref``s for tensors;
    ``in_tree`` is ``(args, kwargs)`` as exported, with ``Ref``s for tensors (other leaves must be equal at each
    call); ``ranges`` each symbol's ``(min, max)``."""
    placeholders: list
    nodes: list
    metas: dict
    names: dict
    result: Any
    in_tree: Any
    ranges: dict = field(default_factory=dict)

    def user_inputs(self) -> list:
        return [p for p in self.placeholders if p.kind == "user_input"]


def build(graph, tracer, forms, state_names: dict, user_names: dict, args: tuple, kwargs: dict,
          ranges: dict) -> tuple[ProgramGraph, dict]:
    """The ``ProgramGraph`` of a capture, and the constants it lifted (name -> tensor). ``state_names`` maps
    id(tensor) or id(its array) -> (kind, name, persistent)
    for the model's parameters and buffers; ``user_names`` an input's path -> its name."""
    from .dynamic_shapes import describe_path

    device = _program_device(graph, tracer)
    default_device = get_default_device()
    names = _Names()
    placeholders, constants = [], {}
    for item in graph.inputs:
        tensor = tracer.tensor_of(item.value)
        if item.kind == "arg":
            label = user_names.get(item.where) or describe_path(item.where)
            placeholders.append(Placeholder(names.fresh(label), item.value.slot, "user_input", path=item.where))
            continue
        known = state_names.get(id(tensor)) or state_names.get(id(tensor._data))
        if known is None:
            target = f"lifted_tensor_{len(constants)}"
            constants[target] = tensor.detach()
            placeholders.append(Placeholder(names.fresh("c_" + target), item.value.slot, "constant", target))
            continue
        kind, target, persistent = known
        prefix = "p_" if kind == "parameter" else "b_"
        placeholders.append(Placeholder(names.fresh(prefix + target.replace(".", "_")), item.value.slot, kind,
                                        target, persistent=persistent))
    order = {"parameter": 0, "buffer": 1, "constant": 2, "user_input": 3}
    placeholders.sort(key=lambda p: order[p.kind])
    slot_names = {p.slot: p.name for p in placeholders}
    nodes = []
    for index, step in enumerate(graph.steps):
        node_name = names.fresh(step.op.name.replace("::", "_"))
        values = [_lifted(v, device) for v in forms.node_values[index]]
        for position, param in enumerate(step.op.params):
            if param.type == "device?" and values[position] is None and device == default_device:
                values[position] = PROGRAM_DEVICE  # "the default device" was the program's: it follows the program
        outputs = tuple(v.slot for v in step.outputs)
        if not step.op.mutates:
            if len(outputs) == 1:
                slot_names[outputs[0]] = node_name
            else:
                for slot in outputs:
                    slot_names[slot] = names.fresh("getitem")
        nodes.append(Node(node_name, step.op.name, values, outputs, tracer.scopes.get(id(step), ""),
                          tracer.lines.get(id(step), "")))
    dtypes = {item.value.slot: item.value.dtype for item in graph.inputs}
    dtypes.update({v.slot: v.dtype for step in graph.steps for v in step.outputs})
    metas = {slot: TensorMeta(tuple(shape), dtypes[slot].name) for slot, shape in forms.shapes.items()}
    result = rebuild(graph.result, _as_ref)
    in_tree = rebuild((args, kwargs), lambda x: Ref(tracer.value_of(x).slot)
                      if isinstance(x, links.tensor.type) else x)
    program = ProgramGraph(placeholders, nodes, metas, slot_names, result, in_tree, dict(ranges))
    return program, constants


class _Names:
    """Readable, unique value names: ``add``, ``add_1`` ... as torch.fx gives them."""

    def __init__(self) -> None:
        self.used: Counter = Counter()

    def fresh(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "value"
        if base[0].isdigit():
            base = "_" + base
        count = self.used[base]
        self.used[base] += 1
        return base if count == 0 else f"{base}_{count}"


def _program_device(graph, tracer):
    """The device of the first tensor input (users' before the state's): the one ``PROGRAM_DEVICE`` stands for."""
    for kind in ("arg", "object"):
        for item in graph.inputs:
            if item.kind == kind:
                return tracer.tensor_of(item.value).device
    return None


def _lifted(value, device):
    """A captured argument as the program keeps it: ``Ref``s for tensors, ``PROGRAM_DEVICE`` for its device."""
    def leaf(x):
        if isinstance(x, Value):
            return Ref(x.slot)
        if isinstance(x, Device) and device is not None and x == device:
            return PROGRAM_DEVICE
        return x
    return rebuild(value, leaf)


def _as_ref(x):
    return Ref(x.slot) if isinstance(x, Value) else x


__all__ = ["Ref", "PROGRAM_DEVICE", "TensorMeta", "Node", "Placeholder", "ProgramGraph", "build", "SymbolicSize"]
