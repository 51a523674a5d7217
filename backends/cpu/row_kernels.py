"""The CPU's ``layer_norm`` as one numba loop over rows, where numba is installed; without it (and for
empty or non-float inputs) the shared NumPy kernel runs.

Chosen by measurement (benchmarks/row_kernels_choice.py, at the transformer benchmarks' shapes, float32
with weight and bias): 0.05 ms against NumPy's 0.23 ms at (1024, 128), 0.07 against 0.23-0.43 at
(2048, 48). The same measurement kept NumPy's softmax and log_softmax: there numba's scalar ``exp``
(libm, one element at a time) costs more than the passes it saves over NumPy's vectorized one (0.6-0.8x).
The loop (``row_loops``) takes C-contiguous (rows, n) arrays over the trailing ``normalized_shape`` dims;
half-precision inputs compute in float32 and are rounded once at the end, as the NumPy kernel does.
numba is imported on the first call, so that importing ember stays cheap, and the loop compiles once per
machine (numba's on-disk cache; about 0.5 s, then about 0.2 s to load in a later process).
"""
from __future__ import annotations

import math

import numpy as np

from . import fusion
from .dtypes import LOW_PRECISION

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_loops = None


def _row_loops():
    global _loops
    if _loops is None:
        from . import row_loops
        _loops = row_loops
    return _loops


def _rows(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` as a C-contiguous (rows, n) array of float32 or float64 (half types widened)."""
    if a.dtype in LOW_PRECISION:
        a = a.astype(np.float32)
    return np.ascontiguousarray(a.reshape(-1, n))


def _vector(v: np.ndarray | None, n: int, dtype: np.dtype) -> np.ndarray | None:
    return None if v is None else np.ascontiguousarray(v.reshape(n), dtype=dtype)


def build(numpy_kernels: dict) -> dict:
    """``{"layer_norm": kernel}`` falling back to ``numpy_kernels``' for what the loop does not take; {}
    without numba."""
    if not fusion.numba_available():
        return {}
    numpy_layer_norm = numpy_kernels["layer_norm"]

    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        if x.size == 0 or not (x.dtype in _FLOATS or x.dtype in LOW_PRECISION):
            return numpy_layer_norm(x, normalized_shape, weight, bias, eps)
        n = math.prod(normalized_shape)
        rows = _rows(x, n)
        out = np.empty_like(rows)
        _row_loops().layer_norm(rows, _vector(weight, n, rows.dtype), _vector(bias, n, rows.dtype), float(eps), out)
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    return {"layer_norm": layer_norm}


__all__ = ["build"]
