"""Reductions and scans, vectorised by NumPy. Half-precision inputs accumulate in float32."""
from __future__ import annotations

import numpy as np

from ..dtypes import LOW_PRECISION


def _axis(a, dim):
    """NumPy's axis for ``dim``: a 0-d tensor accepts dim 0 (and -1) like PyTorch, NumPy no axis at all."""
    return None if a.ndim == 0 else dim


def _accumulating(fn):
    def kernel(a, dim, keepdim, dtype=None):
        dim = _axis(a, dim)
        if a.dtype in LOW_PRECISION:
            return np.asarray(fn(a, axis=dim, keepdims=keepdim, dtype=np.float32)).astype(a.dtype)
        # the dispatcher already cast to the accumulation dtype: NumPy must not widen small ints again
        return np.asarray(fn(a, axis=dim, keepdims=keepdim, dtype=a.dtype))
    return kernel


def _extremum(fn):
    def kernel(a, dim, keepdim):
        return np.asarray(fn(a, axis=_axis(a, dim), keepdims=keepdim))
    return kernel


def _arg(fn):
    def kernel(a, dim, keepdim):
        if _axis(a, dim) is None:
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
        return fn(a, axis=dim, dtype=a.dtype)
    return kernel


KERNELS = {
    "sum": _accumulating(np.add.reduce), "prod": _accumulating(np.multiply.reduce),
    "amax": _extremum(np.max), "amin": _extremum(np.min),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumsum": _scan(np.cumsum), "cumprod": _scan(np.cumprod),
}
