"""Operands of floating-point composites: one float dtype for all, computed in opmath.

PyTorch computes ``atan2(int, int)`` in the default float dtype, ``hypot(float16, float16)`` in float32 rounded
once, and treats a Python number operand as a weak scalar that takes the tensor's dtype. ``floating`` gives a
composite exactly those operands, so its body is written once for float tensors of one dtype.
"""
from __future__ import annotations

import functools
from typing import Callable

from ...schema.dtypes import get_default_dtype
from ...schema.promotion import result_type_of
from ..namespace import F
from .opmath import in_opmath


#: The largest finite value of each float dtype, by name.
LARGEST = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38, "float16": 65504.0,
           "bfloat16": 3.3895313892515355e38}


def is_tensor(value) -> bool:
    return hasattr(value, "_data")


def promoted_dtype(*operands):
    """PyTorch's result type of tensors and Python numbers (a number is a weak scalar)."""
    tensors = [t for t in operands if is_tensor(t)]
    return result_type_of([t.dtype for t in tensors if t.ndim], [t.dtype for t in tensors if not t.ndim],
                          [v for v in operands if not is_tensor(v)])


def float_dtype_of(*operands):
    """The promoted dtype of the operands, or the default float dtype where that is neither floating nor
    complex."""
    dt = promoted_dtype(*operands)
    return dt if dt.is_inexact else get_default_dtype()


def as_tensors(dt, *operands) -> list:
    """Every operand as a tensor of ``dt`` (numbers become 0-d tensors on the first tensor's device)."""
    device = next(t.device for t in operands if is_tensor(t))
    return [F.to_dtype(v, dt) if is_tensor(v) and v.dtype is not dt else
            v if is_tensor(v) else F.full((), v, dtype=dt, device=device) for v in operands]


def floating(composite: Callable) -> Callable:
    """``composite(*tensors, **attrs)`` with its leading operands (tensors or numbers) as tensors of one float
    (or complex) dtype, widened to float32 for half precision and rounded back once at the end."""
    body = in_opmath(composite)

    @functools.wraps(composite)
    def run(*operands, **attrs):
        return body(*as_tensors(float_dtype_of(*operands), *operands), **attrs)
    return run
