"""PyTorch's rule for storing a Python number in an integer dtype, and its error.

PyTorch refuses ``full((2,), 300, dtype=int8)``, ``x.fill_(300)``, ``x[0] = 300`` and ``masked_fill`` with 300
on an int8 tensor, rather than wrapping the value; unsigned dtypes take negative Python ints down to
``-max`` (``-1`` stores 255), floats must lie within the range (NaN and infinities never fit an integer),
and bools take anything. Floating dtypes take any float (beyond their range it is stored as an infinity, as
PyTorch's item assignment does) but no int beyond float64's range. Arithmetic (``x + 300``) wraps as before: only stores are checked.
"""
from __future__ import annotations

import sys

from .dtypes import int8, int16, int32, int64, uint8
from .errors import NumberOverflowError

_FLOAT_MAX = sys.float_info.max
_FLOAT64_BITS = 1024  # ints of more bits have no float64 value

#: The values each integer dtype holds.
INTEGER_RANGES = {uint8: (0, 2 ** 8 - 1), int8: (-2 ** 7, 2 ** 7 - 1), int16: (-2 ** 15, 2 ** 15 - 1),
                  int32: (-2 ** 31, 2 ** 31 - 1), int64: (-2 ** 63, 2 ** 63 - 1)}


def fits(value, dtype) -> bool:
    """Whether PyTorch stores the Python number ``value`` in ``dtype`` without refusing it."""
    limits = INTEGER_RANGES.get(dtype)
    if limits is None or value.__class__ is bool:
        return not (dtype.is_floating_point and value.__class__ is int and value.bit_length() > _FLOAT64_BITS)
    low, high = limits
    if low == 0 and isinstance(value, int):  # two's complement: negative ints wrap into unsigned dtypes
        return -high <= value <= high
    return low <= value <= high  # False for NaN too


def check_fits(op_name: str, value, dtype) -> None:
    """Raise NumberOverflowError naming the op, the value and the dtype's range unless ``value`` fits."""
    if not fits(value, dtype):
        low, high = INTEGER_RANGES.get(dtype, (-_FLOAT_MAX, _FLOAT_MAX))
        raise NumberOverflowError(f"{op_name}: value cannot be converted to type {dtype.name} without overflow: "
                                  f"{value!r} is outside {low}..{high}")


__all__ = ["INTEGER_RANGES", "check_fits", "fits"]
