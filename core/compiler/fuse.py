"""Fusion: chains of elementwise op calls become one kernel on backends that generate code.

The pass walks a captured segment in order and keeps open groups: elementwise calls (ops with a scalar
formula in the schema) of one device and one result shape, each joining the group that made one of its
operands (two such groups merge). A group is emitted as one ``FusedNode`` at the point where something
outside it first needs one of its values, or where a write in place could change what it reads, and
offered to the backend's ``fuse_elementwise`` hook; a backend without the hook, or one that declines,
gets the calls one by one. Where the one value needed outside the group is reduced (``sum``, ``mean``,
``amax``, ``amin``) and the backend says ``fuses_reductions``, the reduction ends the same kernel. Results stay the same up to the floating-point rounding of the generated code.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dispatch import fusion
from ..dispatch.schema.errors import EmberError
from .graph import OpNode, Value


@dataclass(eq=False)
class FusedNode:
    """One generated kernel: ``kernel(*inputs)`` returns ``outputs``; ``members`` are the calls it replaces."""
    kernel: object
    inputs: list
    outputs: list
    members: list

    def operands(self) -> list[Value]:
        return list(self.inputs)


def _fusible(node) -> bool:
    if not isinstance(node, OpNode) or node.checked or node.plan.kind != "kernel":
        return False
    op = node.op
    if op.mutates or op.view or len(node.outputs) != 1 or not fusion.fusible(op, node.plan.attrs):
        return False
    device = node.plan.device
    return all(v.device is device for v in node.operands())


class _Group:
    def __init__(self, shape: tuple, device) -> None:
        self.shape, self.device = shape, device
        self.members: list[OpNode] = []
        self.made: set[int] = set()  # slots of the values made inside
        self.reduction: OpNode | None = None  # a reduction of the group's one result, ending the kernel

    def absorb(self, other: "_Group") -> None:
        merged = sorted(self.members + other.members, key=lambda n: n._order)
        self.members = merged
        self.made |= other.made


def fuse(steps: list, uses: dict, exported: set) -> list:
    """``steps`` with fusible chains replaced by ``FusedNode``s where the backend makes a kernel.
    ``uses``: slot -> the steps reading it; ``exported``: slots needed after the steps (results, saved)."""
    out: list = []
    open_groups: list[_Group] = []

    def close(group: _Group) -> None:
        open_groups.remove(group)
        out.extend(_emit(group, uses, exported))

    for order, step in enumerate(steps):
        step._order = order
        if _fusible(step):
            shape = step.outputs[0].shape
            mine = [g for g in open_groups
                    if any(v.slot in g.made for v in step.operands()) and g.shape == shape and g.device is step.plan.device]
            for g in [g for g in open_groups if g not in mine and any(v.slot in g.made for v in step.operands())]:
                close(g)  # an operand from a group of another shape: that group is done
            if mine:
                group = mine[0]
                for other in mine[1:]:
                    group.absorb(other)
                    open_groups.remove(other)
            else:
                group = _Group(shape, step.plan.device)
                open_groups.append(group)
            group.members.append(step)
            group.made.add(step.outputs[0].slot)
            continue
        final = next((g for g in open_groups if _ends_in_reduction(g, step, uses, exported)), None)
        if final is not None:  # the group's one result feeds only this reduction: one kernel computes both
            final.reduction = step
            close(final)
            continue
        writes = isinstance(step, OpNode) and step.op.mutates
        for g in list(open_groups):
            if not isinstance(step, OpNode) or writes or any(v.slot in g.made for v in step.operands()):
                close(g)
        out.append(step)
    for g in list(open_groups):
        close(g)
    return out


def _ends_in_reduction(group: _Group, step, uses: dict, exported: set) -> bool:
    """Whether ``step`` reduces the group's only value needed outside it, on a backend that fuses reductions."""
    if not isinstance(step, OpNode) or step.checked or step.plan.kind != "kernel" or step.op.name not in fusion.REDUCTIONS:
        return False
    if not getattr(step.plan.backend, "fuses_reductions", False) or step.plan.device is not group.device:
        return False
    value = step.values[step.op.tensor_positions[0]]
    if not isinstance(value, Value) or value.slot not in group.made or _reduction_of(step) is None:
        return False
    inside = {id(n) for n in group.members} | {id(step)}
    for node in group.members:
        slot = node.outputs[0].slot
        needed = slot in exported or any(id(user) not in inside for user in uses.get(slot, ()))
        if needed or (slot == value.slot) != any(user is step for user in uses.get(slot, ())):
            return False
    return True


def _reduction_of(step: OpNode) -> tuple | None:
    """``(op, dims, keepdim)`` of a reduction call as fusion programs name it, or None for one they cannot."""
    op, values = step.op, step.values
    params = op.param_index
    if "dtype" in params and values[params["dtype"]] is not None:
        return None
    ndim = len(step.values[op.tensor_positions[0]].shape)
    dims = values[params["dim"]]
    dims = tuple(range(ndim)) if dims is None or dims == () else tuple(sorted(d % ndim for d in
                                                                               (dims if isinstance(dims, (tuple, list)) else (dims,))))
    if not dims or len(set(dims)) != len(dims):
        return None
    return op.name, dims, bool(values[params["keepdim"]])


def _emit(group: _Group, uses: dict, exported: set) -> list:
    members = group.members
    reduction = group.reduction
    if reduction is not None:
        fused = _program_node(group, uses, exported, _reduction_of(reduction))
        return fused if fused is not None else [*members, reduction]
    if len(members) < 2:
        return members
    fused = _program_node(group, uses, exported, None)
    return fused if fused is not None else members


def _program_node(group: _Group, uses: dict, exported: set, reduction: tuple | None) -> list | None:
    """The group as one ``FusedNode`` (ending in ``reduction`` if given), or None where it is not fused."""
    members = group.members
    inside = {id(n) for n in members}
    inputs: list[Value] = []
    positions: dict[int, int] = {}
    index_of_step: dict[int, int] = {}
    steps = []
    for j, node in enumerate(members):
        operands = []
        plan = node.plan
        for i in node.op.tensor_positions:
            v = node.values[i]
            if isinstance(v, Value):
                if v.slot in index_of_step:
                    operands.append(("step", index_of_step[v.slot]))
                else:
                    if v.slot not in positions:
                        positions[v.slot] = len(inputs)
                        inputs.append(v)
                    operands.append(("input", positions[v.slot]))
            else:
                operands.append(("number", v))
        first = next((v for v in node.operands()), None)
        compute = plan.compute if plan.compute is not None else (first.dtype if first is not None else plan.out)
        steps.append(fusion.Step(node.op.name, tuple(operands), plan.attrs, compute, plan.out))
        index_of_step[node.outputs[0].slot] = j
    if reduction is not None:  # the reduced value is the one result
        value = group.reduction.values[group.reduction.op.tensor_positions[0]]
        results = [index_of_step[value.slot]]
        outputs = [group.reduction.outputs[0]]
        members = [*members, group.reduction]
    else:
        results = [j for j, node in enumerate(members)
                   if node.outputs[0].slot in exported
                   or any(id(user) not in inside for user in uses.get(node.outputs[0].slot, ()))]
        outputs = [members[j].outputs[0] for j in results]
    if not results:
        return None
    try:
        program = fusion.ElementwiseProgram(tuple((v.shape, v.dtype) for v in inputs), tuple(steps), tuple(results),
                                            group.shape, reduction)
    except EmberError:  # defensive: a group the program's own checks refuse runs op by op
        return None
    hook = getattr(members[0].plan.backend, "fuse_elementwise", None)
    kernel = hook(program, group.device.index) if hook is not None else None
    if kernel is None:
        return None
    return [FusedNode(kernel, inputs, outputs, members)]


__all__ = ["FusedNode", "fuse"]
