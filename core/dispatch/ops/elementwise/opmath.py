"""PyTorch's "opmath": float16 and bfloat16 compute in float32 and round once, at the end.

PyTorch's kernels load half-precision values into float32, accumulate and compute there, and round only the
result. Composites written in Ember ops do the same through these helpers, so that squares and sums of large
half-precision values do not overflow on the way (and constants such as eps do not underflow).
"""
from __future__ import annotations

import functools
from typing import Callable

from ...schema.dtypes import dtype as DType, float32
from ...schema.promotion import result_type_of
from ..namespace import F


def opmath_dtype(dt: DType) -> DType:
    """Where ``dt``'s arithmetic happens: float32 for float16 and bfloat16, ``dt`` itself otherwise."""
    return float32 if dt.is_floating_point and dt.itemsize == 2 else dt


def widened(t, dt: DType | None = None):
    """``t`` in the opmath dtype of ``dt`` (default: of its own dtype)."""
    target = opmath_dtype(t.dtype if dt is None else dt)
    return t if t.dtype is target else F.to_dtype(t, target)


def rounded(t, dt: DType):
    """``t`` rounded to ``dt``: once, at the end of a computation in opmath."""
    return t if t.dtype is dt else F.to_dtype(t, dt)


def in_opmath(composite: Callable) -> Callable:
    """A composite run with its floating tensor operands widened to the opmath dtype of their promoted type,
    and its result rounded back to that type at the end. Integer operands and Python numbers pass as they are."""
    def is_float(v) -> bool:
        return hasattr(v, "_data") and v.dtype.is_floating_point

    @functools.wraps(composite)
    def run(*args, **kwargs):
        floats = [v for v in (*args, *kwargs.values()) if is_float(v)]
        if not floats:
            return composite(*args, **kwargs)
        out = result_type_of([t.dtype for t in floats if t.ndim], [t.dtype for t in floats if not t.ndim], [])
        work = opmath_dtype(out)
        if work is out and all(t.dtype is out for t in floats):
            return composite(*args, **kwargs)

        def cast(v):
            return F.to_dtype(v, work) if is_float(v) and v.dtype is not work else v
        return rounded(composite(*map(cast, args), **{k: cast(v) for k, v in kwargs.items()}), out)
    return run


def large_magnitudes(make, dtype: DType, shape: tuple = (4, 16), magnitude: float = 60000.0) -> list:
    """Conformance inputs for ops that must compute in opmath: for float16 and bfloat16, one tensor of values up
    to ``magnitude``, whose squares (and sums, at the default) overflow float16 unless the op widens as PyTorch
    does; for other dtypes, none."""
    if opmath_dtype(dtype) is dtype:
        return []
    return [make(shape, low=-magnitude, high=magnitude)]
