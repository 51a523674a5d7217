"""An op call's values as a transform's rules and the op's composite take them."""
from __future__ import annotations

from ..dispatch.schema.binding import bind, convert
from .batched import VmapUnsupported


def checked_values(op, args: tuple, kwargs: dict) -> tuple[list, bool]:
    """The call's values in parameter order: attributes converted against the first tensor's shape (an element's,
    under vmap) and the op's ``normalize`` hook run, as the dispatcher does before a composite runs; and whether
    the hook could run (it cannot where it reads the values of a batched tensor)."""
    values = bind(op, args, kwargs)
    first = next((values[i] for i in op.tensor_positions if hasattr(values[i], "_data")), None)
    if first is None and op.list_positions:
        first = next((t for t in values[op.list_positions[0]] if hasattr(t, "_data")), None)
    ndim = first.dim() if first is not None else 0
    for i in op.attr_positions:
        values[i] = convert(op, op.params[i], values[i], ndim, first)
    try:
        op.normalize_values(values)
    except VmapUnsupported:
        return values, False  # the hook reads values (index bounds): the physical call checks them instead
    return values, True
