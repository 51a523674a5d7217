"""Reductions and scans. Half-precision inputs accumulate in float32."""
from __future__ import annotations

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    low = lib.low_precision

    def _axis(a, dim):
        """The axis for ``dim``: a 0-d tensor accepts dim 0 (and -1) like PyTorch, NumPy no axis at all."""
        return None if a.ndim == 0 else dim

    def _accumulating(fn):
        def kernel(a, dim, keepdim, dtype=None):
            if not a.ndim:
                dim = None  # a 0-d tensor accepts dim 0 (and -1) like PyTorch, NumPy no axis at all
            kind = a.dtype
            if kind in low:
                return xp.asarray(fn(a, dim, np.float32, None, keepdim)).astype(kind)
            # the dispatcher already cast to the accumulation dtype: the library must not widen small ints again
            # (positional arguments: the keyword forms cost a tenth of a tiny reduction)
            if dim is None and not keepdim:  # x.sum(): straight into a 0-d array, not a scalar made one after
                total = xp.empty((), kind)
                fn(a, None, kind, total, False)
                return total
            return xp.asarray(fn(a, dim, kind, None, keepdim))
        return kernel

    def _extremum(fn):
        def kernel(a, dim, keepdim):
            return xp.asarray(fn(a, axis=_axis(a, dim), keepdims=keepdim))
        return kernel

    def _arg(fn):
        def kernel(a, dim, keepdim):
            if _axis(a, dim) is None:
                out = xp.asarray(fn(a.reshape(-1)), dtype=np.int64)
                return out.reshape((1,) * a.ndim) if keepdim else out
            return xp.asarray(fn(a, axis=dim, keepdims=keepdim), dtype=np.int64)
        return kernel

    def _scan(fn):
        def kernel(a, dim, dtype=None):
            if a.ndim == 0:
                return a.copy()
            if a.dtype in low:
                return fn(a, axis=dim, dtype=np.float32).astype(a.dtype)
            return fn(a, axis=dim, dtype=a.dtype)
        return kernel

    return {
        "sum": _accumulating(lib.sum_reduce), "prod": _accumulating(lib.prod_reduce),
        "amax": _extremum(lib.max_reduce or xp.max), "amin": _extremum(lib.min_reduce or xp.min),
        "argmax": _arg(xp.argmax), "argmin": _arg(xp.argmin),
        "cumsum": _scan(xp.cumsum), "cumprod": _scan(xp.cumprod),
    }
