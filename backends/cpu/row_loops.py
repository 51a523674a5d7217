"""The numba loop of the CPU's layer norm over the rows of a C-contiguous (rows, n) array.

Imported on the first call of the ``row_kernels`` kernel, never with ember (importing numba takes a
while). Each row is read three times and written once, where the NumPy kernel makes eight passes with a
temporary each. Sums accumulate in float64 (NumPy sums float32 pairwise in float32: this is at least as
accurate) and may be reordered (``fastmath={"reassoc"}``: what lets LLVM vectorize them, 4x faster than
in order; no other fast-math flag, so NaN and infinities propagate as in NumPy); the elementwise part is
float32 for float32 rows. ``cache=True``: later processes load the machine code instead of compiling it.
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def layer_norm(x, weight, bias, eps, out):
    """``out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias`` (biased variance; weight and bias may be None)."""
    rows, n = x.shape
    for r in range(rows):
        total = 0.0
        for j in range(n):
            total += x[r, j]
        mean = total / n
        squares = 0.0
        for j in range(n):
            d = x[r, j] - mean
            squares += d * d
        rstd = 1.0 / math.sqrt(squares / n + eps)
        m, s = x.dtype.type(mean), x.dtype.type(rstd)
        for j in range(n):
            y = (x[r, j] - m) * s
            if weight is not None:
                y = y * weight[j]
            if bias is not None:
                y = y + bias[j]
            out[r, j] = y


@njit(cache=True)
def add_rows(target, rows, values):
    """``target[rows[i]] += values[i]`` for each i in order, repeated rows accumulating (negative rows count
    from the end): the scatter-add behind an embedding's gradient, one pass where ``np.add.at`` is ~80x slower."""
    n = target.shape[0]
    for i in range(rows.shape[0]):
        r = rows[i]
        if r < 0:
            r += n
        for j in range(values.shape[1]):
            target[r, j] += values[i, j]
