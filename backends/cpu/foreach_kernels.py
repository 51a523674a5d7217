"""Gradient clipping's multi-tensor ops on NumPy: ``_foreach_norm``, ``_foreach_mul_``, ``_foreach_clamp_min_`` and
``_foreach_clamp_max_`` as one loop over the list, a BLAS or ufunc call per tensor and no dispatch in between.

Norms: the 2-norm is ``sqrt(x . x)`` (one BLAS pass, no |x| temporary), inf the larger of ``max`` and
``-min`` (two passes, no temporary; NaN propagates). Half precision computes in float32 and is rounded
once, as PyTorch's opmath does. Self-contained: the backend adds ``KERNELS`` to its table.
"""
from __future__ import annotations

import math

import numpy as np

from .dtypes import LOW_PRECISION, NUMPY_DTYPE


def _opmath(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype in LOW_PRECISION else dtype


def _vector_norm(x: np.ndarray, ord: float) -> float:
    """The ord-norm of flat ``x``, ``x`` in its compute dtype."""
    if ord == 2:
        return math.sqrt(np.dot(x, x))
    if x.size == 0:
        return math.inf if ord == -math.inf else 0.0
    if ord == math.inf:
        return np.maximum(x.max(), -x.min())
    if ord == 1:
        return np.abs(x).sum()
    magnitudes = np.abs(x)
    if ord == -math.inf:
        return magnitudes.min()
    if ord == 0:
        return np.count_nonzero(magnitudes)
    return np.sum(magnitudes ** ord) ** (1.0 / ord)


def _foreach_norm(tensors: list, ord: float, dtype=None) -> tuple:
    wanted = NUMPY_DTYPE[dtype] if dtype is not None else None
    dtypes = {t.dtype for t in tensors} if wanted is None else {wanted}
    if len(dtypes) == 1:  # the usual call: one array of norms, handed out as 0-d views
        out = dtypes.pop()
        work = _opmath(out)
        norms = np.array([_vector_norm(t.reshape(-1).astype(work, copy=False), ord) for t in tensors], work)
        norms = norms.astype(out, copy=False)
        return tuple(norms[i, ...] for i in range(len(tensors)))
    return tuple(np.asarray(_vector_norm(t.reshape(-1).astype(_opmath(t.dtype), copy=False), ord),
                            _opmath(t.dtype)).astype(t.dtype, copy=False) for t in tensors)


def _foreach_mul_(tensors: list, other) -> None:
    factor = np.asarray(other).reshape(())
    by_dtype: dict = {}  # the factor in each tensor's compute dtype, as PyTorch's scalar operand is
    for t in tensors:
        scale = by_dtype.get(t.dtype)
        if scale is None:
            scale = by_dtype[t.dtype] = factor.astype(_opmath(t.dtype))
        if t.dtype in LOW_PRECISION:
            t[...] = np.multiply(t.astype(np.float32), scale)
        else:
            np.multiply(t, scale, out=t)


def _clamp_each(ufunc, tensors: list, bound) -> None:
    """``t = ufunc(t, bound)`` in place. In a tensor's own dtype, half precision too: the result is an element
    or the bound, so comparing in float32 and rounding would give the same."""
    by_dtype: dict = {}
    for t in tensors:
        b = by_dtype.get(t.dtype)
        if b is None:
            integral = np.issubdtype(t.dtype, np.integer) or t.dtype == np.bool_
            # a floating bound goes through float: ml_dtypes' half types take no Python int beyond int64
            b = by_dtype[t.dtype] = np.asarray(bound if integral else float(bound), dtype=t.dtype)
        ufunc(t, b, out=t)


def _foreach_clamp_min_(tensors: list, scalar) -> None:
    _clamp_each(np.maximum, tensors, scalar)


def _foreach_clamp_max_(tensors: list, scalar) -> None:
    _clamp_each(np.minimum, tensors, scalar)


KERNELS = {"_foreach_norm": _foreach_norm, "_foreach_mul_": _foreach_mul_,
           "_foreach_clamp_min_": _foreach_clamp_min_, "_foreach_clamp_max_": _foreach_clamp_max_}
