"""vmap's batching rules (``OpDef.batch``) of the indexing primitives: each runs the op once on the physical
tensors (the batch dim first) of a ``VmapCall`` (``ember.func.vmap_mode``), or declines (NotImplemented)."""
from __future__ import annotations

from ...schema.meta import broadcast_shapes
from ..namespace import F


def along_dim(call):
    """gather, scatter, scatter_add: operands of one rank, each repeated for every element where unbatched
    (expanded, no copy), the dim moved past the batch dim. A number ``src`` stays as it is."""
    values = list(call.values)
    op = call.op
    if any(values[i].dim() == 0 for i in op.tensor_positions if hasattr(values[i], "_data")):
        return NotImplemented
    for i in op.tensor_positions:
        if hasattr(values[i], "_data"):
            values[i] = call.expanded(values[i])
    values[op.param_index["dim"]] += 1
    return call.wrap(call.call(values))


def index(call):
    """``input[indices]`` with the input batched and the indices not: the whole batch dim goes first. Where the
    indexed dims are not adjacent, NumPy's rule puts the indexed dims first, so the batch dim is moved back."""
    x, indices = call.values
    if any(call.is_batched(i) for i in indices if i is not None):
        return NotImplemented
    used = [k for k, i in enumerate(indices) if i is not None]
    out = F.index(call.physical(x), [None, *indices])
    if used and used != list(range(used[0], used[-1] + 1)):
        broadcast = broadcast_shapes("index", *(tuple(indices[k].shape) for k in used))
        out = F.movedim(out, len(broadcast), 0)
    return call.wrap(out)


def index_put(call):
    """The out-of-place ``index_put`` with the indices unbatched: the input repeated for every element (a copy),
    then one write past the batch dim, the values aligned behind it. Derivatives build their gradients this way
    (zeros, then the rows put in), so a batch of gradients (``jacrev``) writes one batch."""
    x, indices, values, accumulate = call.values
    used = [k for k, i in enumerate(indices) if i is not None]
    if any(call.is_batched(indices[k]) for k in used) or (used and used != list(range(used[0], used[-1] + 1))):
        return NotImplemented
    broadcast = broadcast_shapes("index_put", *(tuple(indices[k].shape) for k in used)) if used else ()
    indexed = (*x.shape[:used[0]], *broadcast, *x.shape[used[-1] + 1:]) if used else tuple(x.shape)
    physical = values
    if call.is_batched(values):
        physical = call.physical(values)
        if values.dim() < len(indexed):
            physical = F.reshape(physical, (call.size, *(1,) * (len(indexed) - values.dim()), *values.shape))
    target = F.clone(call.expanded(x))
    return call.wrap(F.index_put_(target, [None, *indices], physical, accumulate))
