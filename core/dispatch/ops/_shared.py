"""Private helpers that op modules of more than one family use: whether a value is a tensor, a shape with one
dim's size replaced, and the promotion rule "in the first input's dtype" (indexing's ops, ``sorting``, and the
shape family's ``reorderings`` and ``strided``). A family's own helpers are in its ``_shared.py``."""
from __future__ import annotations



def _is_tensor(value) -> bool:
    return hasattr(value, "_data")


def _with_size(in_shape: tuple, dim: int, size) -> tuple:
    return in_shape[:dim] + (size,) + in_shape[dim + 1:] if in_shape else in_shape


def _in_input_dtype(rt, op, args):
    """Output (and computation) in the first input's dtype: other operands are cast to it."""
    dt = args.first_input._dtype if _is_tensor(args.first_input) else rt
    return dt, dt
