"""PyTorch's type promotion: a lattice for pairs, and categories for mixed operands.

Operands are ranked: tensors with dimensions over zero-dim tensors over Python
scalars. A lower-ranked operand only changes the result when its category
(bool < int < float < complex) is higher than everything ranked above it. A complex operand below a floating
one gives that float's complex counterpart (float64 tensor + 1j is complex128, float32 tensor + a 0-d
complex128 tensor is complex64), as PyTorch's ``combine_categories``.
"""
from __future__ import annotations

from functools import lru_cache

from .dtypes import (ALL_DTYPES, bfloat16, bool_, dtype, float16, float32, get_default_complex_dtype,
                     get_default_dtype, int64)

#: The promotion categories, lowest first.
CATEGORY_ORDER = {"bool": 0, "int": 1, "float": 2, "complex": 3}


@lru_cache(maxsize=None)
def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype that both ``type1`` and ``type2`` can be cast to without losing category."""
    a, b = type1, type2
    if a is b:
        return a
    if a is bool_:
        return b
    if b is bool_:
        return a
    if a.kind == "complex" or b.kind == "complex":
        # components wide enough for both (float64 with complex64 is complex128); an integer takes the complex
        components = [d.to_real() for d in (a, b) if d.kind != "int"]
        return promote_types(*components).to_complex() if len(components) == 2 else (a if a.is_complex else b)
    if a.kind == "float" or b.kind == "float":
        if a.kind != "float":
            return b
        if b.kind != "float":
            return a
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    # both integers
    if a.is_signed == b.is_signed:
        return a if a.itemsize > b.itemsize else b
    unsigned, signed = (a, b) if b.is_signed else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    # uint8 with int8: the next signed size up
    return next(d for d in ALL_DTYPES if d.kind == "int" and d.is_signed and d.itemsize > unsigned.itemsize)


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar stands for in promotion."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return get_default_complex_dtype()
    return get_default_dtype()


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None or higher.kind == "complex":
        return higher
    if lower.kind == "complex":
        return higher.to_complex() if higher.kind == "float" else lower
    if higher.kind == "float":
        return higher
    if higher is bool_ or lower.kind == "float":
        return promote_types(higher, lower)
    return higher


def _fold(dtypes) -> dtype | None:
    out = None
    for d in dtypes:
        out = d if out is None else promote_types(out, d)
    return out


def result_type_of(dim_dtypes, zero_dim_dtypes=(), scalars=()) -> dtype:
    """Promotion over operands already split by rank: see the module docstring."""
    wrapped = _fold(scalar_dtype(s) for s in scalars)
    out = _combine(_fold(dim_dtypes), _combine(_fold(zero_dim_dtypes), wrapped))
    if out is None:
        raise TypeError("result_type: expected at least one tensor or scalar")
    return out


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's same-kind rule for in-place and ``out=`` results: no complex to float, no float to int, no int
    to bool."""
    return CATEGORY_ORDER[from_.kind] <= CATEGORY_ORDER[to.kind]


__all__ = ["CATEGORY_ORDER", "promote_types", "result_type_of", "scalar_dtype", "can_cast"]
