"""``ember.finfo`` and ``ember.iinfo``: the numeric limits of Ember's dtypes, with PyTorch's attribute names."""
from __future__ import annotations

import math

from .dispatch.schema.dtypes import as_dtype, get_default_dtype

# (bits, mantissa bits, largest exponent, smallest normal exponent) of each IEEE-style float format
_FLOAT_FORMATS = {"float16": (16, 10, 15, -14), "bfloat16": (16, 7, 127, -126), "float32": (32, 23, 127, -126),
                  "float64": (64, 52, 1023, -1022)}


class finfo:
    """``finfo(type=None)``: limits of a floating dtype (the default dtype when None); of a complex dtype, those
    of its component type (complex64's are float32's), as PyTorch.

    ``bits``, ``eps`` (the gap between 1 and the next value), ``max``, ``min`` (= -max), ``tiny`` and
    ``smallest_normal`` (the smallest positive normal number), ``resolution`` (10 to the minus the number of
    exact decimal digits) and ``dtype`` (the dtype's name, a str, as in PyTorch).
    """

    def __init__(self, type=None) -> None:
        dt = get_default_dtype() if type is None else as_dtype(type)
        if dt.is_complex:
            dt = dt.to_real()
        if dt.name not in _FLOAT_FORMATS:
            raise TypeError(f"ember.finfo() requires a floating point input type, got {dt!r}. Use ember.iinfo to "
                            f"handle integer types")
        self.bits, mantissa, max_exponent, min_exponent = _FLOAT_FORMATS[dt.name]
        self.eps = 2.0 ** -mantissa
        self.max = (2.0 - self.eps) * 2.0 ** max_exponent
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** min_exponent
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = dt.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """``iinfo(type)``: ``bits``, ``min``, ``max`` and ``dtype`` (its name) of an integer dtype."""

    def __init__(self, type) -> None:
        dt = as_dtype(type)
        if dt.kind == "bool":
            raise TypeError(f"{dt!r} is not supported by ember.iinfo")
        if dt.kind != "int":
            raise TypeError(f"ember.iinfo() requires an integer input type, got {dt!r}. Use ember.finfo to handle "
                            f"floating types")
        self.bits = 8 * dt.itemsize
        self.min = -(2 ** (self.bits - 1)) if dt.is_signed else 0
        self.max = 2 ** (self.bits - 1) - 1 if dt.is_signed else 2 ** self.bits - 1
        self.dtype = dt.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
