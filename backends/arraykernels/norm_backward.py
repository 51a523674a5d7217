"""layer_norm_backward as a few whole-array passes, for NumPy and CuPy alike.

The schema's composite takes about fifteen dispatched ops; here the rows are one (rows, n) matrix and
the three gradients come from the standardization and two row means. Half-precision inputs compute in
float32; the input's gradient is rounded once at the end, the weight's and bias's stay float32, as the
composite's. The CPU replaces this kernel with a
numba row loop where numba is installed (backends/cpu/row_kernels.py) and keeps it for the rest.
"""
from __future__ import annotations

import math

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    low, quiet = lib.low_precision, lib.quiet

    def _rows(a, count: int, n: int):
        return (a.astype(np.float32) if a.dtype in low else a).reshape(count, n)

    def _layer_norm_backward(grad_output, x, normalized_shape, weight=None, eps=1e-5):
        """invstd * (gw - mean(gw) - xhat * mean(gw * xhat)) per row, with gw = grad * weight; the weight's and
        bias's gradients are the column sums of grad * xhat and of grad."""
        normalized = tuple(normalized_shape)
        n, count = math.prod(normalized), math.prod(x.shape[:x.ndim - len(normalized)])
        rows, g = _rows(x, count, n), _rows(grad_output, count, n)
        with quiet():  # an empty row's mean is NaN, as the composite's
            mean = rows.mean(axis=1, keepdims=True)
            xhat = rows - mean
            invstd = 1.0 / xp.sqrt(xp.mean(xp.square(xhat), axis=1, keepdims=True) + eps)
            xhat *= invstd
            grad_weight = (g * xhat).sum(axis=0)
            grad_bias = g.sum(axis=0)
            scaled = g if weight is None else g * _rows(weight, 1, n)
            grad_input = scaled - scaled.mean(axis=1, keepdims=True)
            grad_input -= xhat * (scaled * xhat).mean(axis=1, keepdims=True)
            grad_input *= invstd
        return (grad_input.reshape(x.shape).astype(x.dtype, copy=False), grad_weight.reshape(normalized),
                grad_bias.reshape(normalized))

    return {"layer_norm_backward": _layer_norm_backward}
