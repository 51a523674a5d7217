"""Reductions and scans, vectorised by NumPy. Half-precision inputs accumulate in float32."""
from __future__ import annotations

import numpy as np

from ..dtypes import LOW_PRECISION


def _accumulating(fn):
    def kernel(a, dim, keepdim, dtype=None):
        if a.dtype in LOW_PRECISION:
            return np.asarray(fn(a, axis=dim, keepdims=keepdim, dtype=np.float32)).astype(a.dtype)
        return np.asarray(fn(a, axis=dim, keepdims=keepdim))
    return kernel


def _extremum(fn):
    def kernel(a, dim, keepdim):
        return np.asarray(fn(a, axis=dim, keepdims=keepdim))
    return kernel


def _arg(fn):
    def kernel(a, dim, keepdim):
        if dim is None:
            out = np.asarray(fn(a.reshape(-1)), dtype=np.int64)
            return out.reshape((1,) * a.ndim) if keepdim else out
        return np.asarray(fn(a, axis=dim, keepdims=keepdim), dtype=np.int64)
    return kernel


def _scan(fn):
    def kernel(a, dim, dtype=None):
        if a.ndim == 0:
            return a.copy()
        if a.dtype in LOW_PRECISION:
            return fn(a, axis=dim, dtype=np.float32).astype(a.dtype)
        return fn(a, axis=dim)
    return kernel


KERNELS = {
    "sum": _accumulating(np.add.reduce), "prod": _accumulating(np.multiply.reduce),
    "amax": _extremum(np.max), "amin": _extremum(np.min),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumsum": _scan(np.cumsum), "cumprod": _scan(np.cumprod),
}
