"""The numba loops of the CPU's float32 softmax, log_softmax, log-sum-exp (cross-entropy's) and log_softmax
backward, over the rows of C-contiguous (rows, n) arrays.

They call ``ember.dispatch.fast_exp``'s branch-free float32 exp, which numba vectorizes, where its own
``np.exp`` is a scalar libm call that made these loops slower than NumPy's (see row_kernels.py). That exp
is generated source, so the loops are too: ``load()`` joins both and compiles them through the fusion
module's loader, which writes the source to a file named by its hash (numba's on-disk cache then serves
later processes, and a change to either part gets a file, and a cache entry, of its own). Each row is read
twice or three times and written once, with no temporaries; sums may be reordered (``reassoc``, which
lets LLVM vectorize them) and accumulate in float32, as NumPy's pairwise float32 sums do. NaN and
infinities come out as NumPy's: a NaN or an infinity in a row makes its exp terms, and so the row, NaN.
"""
from __future__ import annotations

import functools

from ember.dispatch import fast_exp

from . import fusion

_LOOPS = '''
@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def row_max(x, r):
    """Row ``r``'s largest value (a NaN there makes the row's exp terms NaN whatever this returns)."""
    top = x[r, 0]
    for j in range(1, x.shape[1]):
        top = max(top, x[r, j])
    return top


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def softmax(x, out):
    """``out[r] = exp(x[r] - max) / sum(exp(x[r] - max))``."""
    rows, n = x.shape
    for r in range(rows):
        top = row_max(x, r)
        total = np.float32(0.0)
        for j in range(n):
            e = exp32(x[r, j] - top)
            out[r, j] = e
            total += e
        for j in range(n):
            out[r, j] = out[r, j] / total


@njit(cache=True, error_model="numpy", fastmath={"reassoc"}, inline="always")
def row_shifted_logsumexp(x, r):
    """Row ``r``'s largest value and ``log(sum(exp(x[r] - max)))``."""
    top = row_max(x, r)
    total = np.float32(0.0)
    for j in range(x.shape[1]):
        total += exp32(x[r, j] - top)
    return top, np.float32(math.log(total))


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def log_softmax(x, out):
    """``out[r] = (x[r] - max) - log(sum(exp(x[r] - max)))``, rounded in that order as NumPy's kernel does."""
    for r in range(x.shape[0]):
        top, shifted_lse = row_shifted_logsumexp(x, r)
        for j in range(x.shape[1]):
            out[r, j] = (x[r, j] - top) - shifted_lse


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def logsumexp(x, out):
    """``out[r] = max + log(sum(exp(x[r] - max)))``: what log_softmax subtracts, and cross-entropy's normalizer."""
    for r in range(x.shape[0]):
        top, shifted_lse = row_shifted_logsumexp(x, r)
        out[r] = top + shifted_lse


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def log_softmax_backward(grad, y, out):
    """``out[r] = grad[r] - exp(y[r]) * sum(grad[r])``: log_softmax's gradient from its output ``y``."""
    rows, n = y.shape
    for r in range(rows):
        total = np.float32(0.0)
        for j in range(n):
            total += grad[r, j]
        for j in range(n):
            out[r, j] = grad[r, j] - exp32(y[r, j]) * total
'''


def source() -> str:
    """The module's source: fast_exp's float32 exp (inlined into each loop), then the loops."""
    header = "import math\n\nimport numpy as np\nfrom numba import njit\n\n\n"
    exp = '@njit(cache=True, error_model="numpy", inline="always")\n' + fast_exp.python_source("exp32")
    return header + exp + "\n" + _LOOPS


@functools.cache
def load():
    """The compiled loops (numba is imported, and the loops compiled or loaded from its cache, on the first call)."""
    return fusion.load_source(source())


__all__ = ["load", "source"]
