"""The batching rules of op families (``OpDef.batch`` names one of ``FAMILIES``).

A rule gets a ``VmapCall`` (``vmap_mode``): the call's bound values, with attributes converted against
the elements' shapes, and helpers to read batches (``physical``, ``expanded``), run the op below the
level (``call``) and wrap its results as batched (``wrap``). It runs the op once on the physical tensors,
whose batch dim leads, or returns ``NotImplemented`` to decline the call (then the composite's
decomposition or the per-element loop runs it). Rules of single ops live in the op's declaration.
"""
from __future__ import annotations

from ..dispatch.ops import F

_DIM_TYPES = ("dim", "dim?", "dim[]?")
_SHAPED_TYPES = ("dim", "dim?", "dim[]?", "int[]", "int[]?")


def _list_batched(call) -> bool:
    return any(isinstance(call.values[i], (list, tuple)) and any(call.is_batched(t) for t in call.values[i])
               for i in call.op.list_positions)


def elementwise(call):
    """Operands broadcast: each batched one gets its batch dim first and size-1 dims up to the highest rank
    among the operands, so that the unbatched ones broadcast against its elements."""
    op = call.op
    if _list_batched(call) or any(op.params[i].type in _SHAPED_TYPES for i in op.attr_positions):
        return NotImplemented
    values = list(call.values)
    tensors = [i for i in op.tensor_positions if hasattr(values[i], "_data")]
    rank = max(values[i].dim() for i in tensors)
    for i in tensors:
        v = values[i]
        if call.is_batched(v):
            p = call.physical(v)
            if v.dim() < rank:
                p = F.reshape(p, (call.size,) + (1,) * (rank - v.dim()) + tuple(v.shape))
            values[i] = p
    return call.wrap(call.call(values))


def dims(call):
    """One batched operand, the first: every dim attribute moves one place, past the batch dim; a dim list
    left out (all dims) becomes the element's dims."""
    op = call.op
    values = list(call.values)
    first = op.tensor_positions[0]
    x = values[first]
    rest = [values[i] for i in op.tensor_positions[1:]]
    if (not call.is_batched(x) or x.dim() == 0 or _list_batched(call)
            or any(call.is_batched(v) for v in rest)):
        return NotImplemented
    rank = x.dim()
    for i in op.attr_positions:
        kind, v = op.params[i].type, values[i]
        if kind not in _DIM_TYPES:
            continue
        if v is None:
            if kind != "dim[]?":
                return NotImplemented
            values[i] = tuple(range(1, rank + 1))
        elif isinstance(v, (tuple, list)):
            if not v:
                return NotImplemented  # an empty dim list means all dims to some ops and none to others
            values[i] = tuple(d + 1 for d in v)
        else:
            values[i] = v + 1
    values[first] = call.physical(x)
    return call.wrap(call.call(values))


def trailing(call):
    """Ops that act on an element's trailing dims and take any leading ones as a batch (``clone``, the
    decompositions of linalg): the first operand alone batched, attributes unchanged."""
    op = call.op
    values = list(call.values)
    first = op.tensor_positions[0]
    if _list_batched(call) or any(call.is_batched(values[i]) for i in op.tensor_positions[1:]):
        return NotImplemented
    values[first] = call.physical(values[first])
    return call.wrap(call.call(values))


def random(call):
    """A random primitive drawing ``size`` values: one draw per element of the batch ("different")."""
    op = call.op
    at = op.param_index.get("size")
    if at is None or any(call.is_batched(call.values[i]) for i in op.tensor_positions):
        return NotImplemented
    values = list(call.values)
    values[at] = (call.size, *values[at])
    return call.wrap(call.call(values))


def loop(call):
    """Once per element, stacked: for ops whose meaning is a memory layout (``as_strided``), which a batch changes."""
    return call.loop(warn=False)


FAMILIES = {"elementwise": elementwise, "dims": dims, "trailing": trailing, "random": random, "loop": loop}
