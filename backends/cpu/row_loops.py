"""The numba loops of the CPU's layer norm, its backward and softmax's backward over the rows of C-contiguous
(rows, n) arrays: the row kernels that need no exp (those that do are in ``softmax_loops``).

Imported on the first call of a ``row_kernels`` kernel, never with ember (importing numba takes a
while). The layer norm reads each row three times and writes it once, where the NumPy kernel makes eight
passes with a temporary each; the backward ops likewise make one pass per sum, without temporaries. Sums
accumulate in float64 (NumPy sums float32 pairwise in float32: this is at least as accurate) and may be
reordered (``fastmath={"reassoc"}``: what lets LLVM vectorize them, 4x faster than
in order; no other fast-math flag, so NaN and infinities propagate as in NumPy); the elementwise part is
float32 for float32 rows. ``cache=True``: later processes load the machine code instead of compiling it.
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def row_statistics(x, r, eps):
    """Row ``r``'s mean and 1 / sqrt(var + eps) (biased variance, two passes), in x's dtype."""
    n = x.shape[1]
    total = 0.0
    for j in range(n):
        total += x[r, j]
    mean = total / n
    squares = 0.0
    for j in range(n):
        d = x[r, j] - mean
        squares += d * d
    return x.dtype.type(mean), x.dtype.type(1.0 / math.sqrt(squares / n + eps))


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def layer_norm(x, weight, bias, eps, out):
    """``out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias`` (biased variance; weight and bias may be None)."""
    rows, n = x.shape
    for r in range(rows):
        m, s = row_statistics(x, r, eps)
        for j in range(n):
            y = (x[r, j] - m) * s
            if weight is not None:
                y = y * weight[j]
            if bias is not None:
                y = y + bias[j]
            out[r, j] = y


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def layer_norm_backward(x, grad, weight, eps, grad_input, grad_weight, grad_bias):
    """Per row, with xhat the standardized row and gw = grad * weight:
    ``grad_input[r] = invstd * (gw - mean(gw) - xhat * mean(gw * xhat))``; the column sums of grad * xhat and
    of grad are added into ``grad_weight`` and ``grad_bias`` (float64 accumulators the caller zeroes). Each
    row is read four times (statistics, two sums, output) and written once."""
    rows, n = x.shape
    for r in range(rows):
        m, s = row_statistics(x, r, eps)
        total = 0.0
        projected = 0.0
        for j in range(n):
            xhat = (x[r, j] - m) * s
            g = grad[r, j]
            grad_weight[j] += g * xhat
            grad_bias[j] += g
            if weight is not None:
                g = g * weight[j]
            total += g
            projected += g * xhat
        shift, slope = x.dtype.type(total / n), x.dtype.type(projected / n)
        for j in range(n):
            xhat = (x[r, j] - m) * s
            g = grad[r, j]
            if weight is not None:
                g = g * weight[j]
            grad_input[r, j] = s * (g - shift - xhat * slope)


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def softmax_backward(grad, y, out):
    """``out[r] = y[r] * (grad[r] - sum(grad[r] * y[r]))``: softmax's gradient from its output ``y``, two passes
    over each row and no temporaries (no exp, so numba's scalar one costs nothing here)."""
    rows, n = y.shape
    for r in range(rows):
        total = 0.0
        for j in range(n):
            total += grad[r, j] * y[r, j]
        dot = y.dtype.type(total)
        for j in range(n):
            out[r, j] = y[r, j] * (grad[r, j] - dot)


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
