"""The numba loops of the CPU's recurrent steps: the gate arithmetic of one time step of an LSTM, GRU or Elman
layer, forward and backward, over the (N, H) rows of C-contiguous arrays (``StepMath`` in
``ember.backends.arraykernels.recurrent`` says what each one reads and writes).

Each loop makes one pass where the array expressions make a dozen, with no temporaries, and keeps to a few
arrays so that LLVM vectorizes it (a loop reading and writing many arrays needs more run-time overlap checks
than LLVM makes, and stays scalar). The forward loops exponentiate with branch-free exps that vectorize:
``ember.dispatch.fast_exp``'s for float32 and ``_EXP64`` below for float64 (numba's ``math.exp`` is a scalar
libm call: a float64 LSTM step took 2.6x NumPy's ufuncs with it). sigmoid(x) = 1 / (1 + exp(-x)); tanh(x) =
(1 - e) / (1 + e) with e = exp(-2|x|), and an odd Taylor polynomial below ``TANH_SERIES``, where that difference
would cancel. Within 2.2 ulps of the exact values for sigmoid and float32 tanh, 6 for float64 tanh just above
its switch (tests/test_recurrent_kernels.py). ``fastmath={"contract"}`` alone lets LLVM fuse multiplies and adds
(the exps' polynomials: 2.3x faster, and rounded once per step instead of twice); NaN, infinities and signed
zeros keep IEEE semantics. numba inlines sigmoid and tanh into the loops (``inline="always"``; left to LLVM,
two float64 loops stayed scalar) and LLVM the exps (inlined by numba too, the first compile took 10 s instead of
4 for four loops, for no speed). Each loop exists per dtype, its constants in that dtype (a float64 literal would
widen a float32 loop): the source is one template written out for float32 and float64, joined with the exps and
compiled through the fusion module's loader (a file named by its hash, so numba's on-disk cache serves later
processes and a change gets a cache entry of its own). numba is imported on the first call, never with ember.
"""
from __future__ import annotations

import functools
import math

from ember.dispatch import fast_exp

from . import fusion

#: float64 exp, the float32 one's method with float64 constants: x = k ln2 + r with |r| <= ln2 / 2 (ln 2 split in
#: fdlibm's two parts, so k ln2_hi is exact), e^r by its Taylor series to r^13 (remainder below 4e-18 relative),
#: 2^k as two factors built from exponent bits (normal for every k in [-1075, 1025], so subnormal results round
#: once and large ones overflow to inf). Clamped to [-746, 710], where exp rounds to 0 and to inf; NaN stays NaN.
_EXP64 = '''
@njit(cache=True, error_model="numpy", fastmath={"contract"})
def exp64(x):
    c = x if x < 710.0 else 710.0
    c = c if c > -746.0 else -746.0
    k = (c * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0
    r = (c - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10
    p = HORNER
    n = np.int64(k)
    half = n >> 1
    first = np.int64((half + 1023) << 52).view(np.float64)
    second = np.int64((n - half + 1023) << 52).view(np.float64)
    y = (p * first) * second
    return x if x != x else y
'''.replace("HORNER", " + r * (".join(repr(1 / math.factorial(k)) for k in range(14)) + ")" * 13)

#: where tanh switches from its odd series to the exp form: the series to x^9 is within half an ulp below it, and
#: the exp form's cancellation, ulp(1) / 2|x| relative, costs 2 ulps above it in float32 and 6 in float64
TANH_SERIES = {"float32": 0.3, "float64": 0.04}

_TEMPLATE = '''
@njit(cache=True, error_model="numpy", fastmath={"contract"}, inline="always")
def sigmoid__DTYPE(x):
    return FLOAT(1.0) / (FLOAT(1.0) + EXP(-x))


@njit(cache=True, error_model="numpy", fastmath={"contract"}, inline="always")
def tanh__DTYPE(x):
    a = abs(x)
    e = EXP(FLOAT(-2.0) * a)
    s = a * a
    series = a + a * s * (FLOAT(-1.0 / 3.0) + s * (FLOAT(2.0 / 15.0) + s * (FLOAT(-17.0 / 315.0)
                                                                           + s * FLOAT(62.0 / 2835.0))))
    t = series if a < FLOAT(TANH_SERIES) else (FLOAT(1.0) - e) / (FLOAT(1.0) + e)
    return t if x > FLOAT(0.0) else (-t if x < FLOAT(0.0) else x)  # x itself for zeros (their sign) and NaN


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def lstm_forward__DTYPE(gi, gh, bias, c_prev, ws, h):
    """ws = (i, f, g, o, c, tanh c) of gates gi + gh + bias (i, f, g, o along the rows); h = o tanh(c)."""
    batch, hidden = h.shape
    for r in range(batch):
        for j in range(hidden):
            ws[0, r, j] = sigmoid__DTYPE(gi[r, j] + gh[r, j] + bias[j])
        for j in range(hidden):
            k = hidden + j
            ws[1, r, j] = sigmoid__DTYPE(gi[r, k] + gh[r, k] + bias[k])
        for j in range(hidden):
            k = 2 * hidden + j
            ws[2, r, j] = tanh__DTYPE(gi[r, k] + gh[r, k] + bias[k])
        for j in range(hidden):
            k = 3 * hidden + j
            ws[3, r, j] = sigmoid__DTYPE(gi[r, k] + gh[r, k] + bias[k])
        for j in range(hidden):
            c = ws[1, r, j] * c_prev[r, j] + ws[0, r, j] * ws[2, r, j]
            ws[4, r, j] = c
            tanh_c = tanh__DTYPE(c)
            ws[5, r, j] = tanh_c
            h[r, j] = ws[3, r, j] * tanh_c


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def gru_forward__DTYPE(gi, gh, b_hh, h_prev, ws, h):
    """ws = (r, z, n, W_hn h + b_hn); h = n + z (h_prev - n), with n = tanh(gi_n + r (W_hn h + b_hn))."""
    batch, hidden = h.shape
    for r in range(batch):
        for j in range(hidden):
            ws[0, r, j] = sigmoid__DTYPE(gi[r, j] + gh[r, j] + b_hh[j])
        for j in range(hidden):
            ws[1, r, j] = sigmoid__DTYPE(gi[r, hidden + j] + gh[r, hidden + j] + b_hh[hidden + j])
        for j in range(hidden):
            h_n = gh[r, 2 * hidden + j] + b_hh[2 * hidden + j]
            ws[3, r, j] = h_n
            ws[2, r, j] = tanh__DTYPE(gi[r, 2 * hidden + j] + ws[0, r, j] * h_n)
        for j in range(hidden):
            n = ws[2, r, j]
            h[r, j] = n + ws[1, r, j] * (h_prev[r, j] - n)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def tanh_forward__DTYPE(gi, gh, bias, h):
    batch, hidden = h.shape
    for r in range(batch):
        for j in range(hidden):
            h[r, j] = tanh__DTYPE(gi[r, j] + gh[r, j] + bias[j])


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def lstm_backward__DTYPE(dh, dc, ws, gws, c_prev, dgi):
    """The gates' gradients into dgi (rows i, f, g, o); dc becomes the gradient of c_prev. One loop per quantity:
    all of them in one loop stayed scalar (too many arrays for LLVM's overlap checks)."""
    batch, hidden = dh.shape
    one = FLOAT(1.0)
    for r in range(batch):
        for j in range(hidden):  # the cell state's whole gradient
            tanh_c = ws[5, r, j]
            dc[r, j] += (dh[r, j] * ws[3, r, j] + gws[5, r, j]) * (one - tanh_c * tanh_c) + gws[4, r, j]
        for j in range(hidden):
            i = ws[0, r, j]
            dgi[r, j] = (dc[r, j] * ws[2, r, j] + gws[0, r, j]) * (i * (one - i))
        for j in range(hidden):
            f = ws[1, r, j]
            dgi[r, hidden + j] = (dc[r, j] * c_prev[r, j] + gws[1, r, j]) * (f * (one - f))
        for j in range(hidden):
            g = ws[2, r, j]
            dgi[r, 2 * hidden + j] = (dc[r, j] * ws[0, r, j] + gws[2, r, j]) * (one - g * g)
        for j in range(hidden):
            o = ws[3, r, j]
            dgi[r, 3 * hidden + j] = (dh[r, j] * ws[5, r, j] + gws[3, r, j]) * (o * (one - o))
        for j in range(hidden):
            dc[r, j] *= ws[1, r, j]


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def gru_backward__DTYPE(dh, ws, gws, h_prev, dgi, dgh):
    """The gradients of gi into dgi and of h_prev W_hh^T + b_hh into dgh; dh becomes dh z (its direct part).
    One loop per quantity, as lstm_backward."""
    batch, hidden = dh.shape
    one = FLOAT(1.0)
    for r in range(batch):
        for j in range(hidden):  # n's pre-activation
            n = ws[2, r, j]
            dgi[r, 2 * hidden + j] = (dh[r, j] * (one - ws[1, r, j]) + gws[2, r, j]) * (one - n * n)
        for j in range(hidden):  # W_hn h + b_hn, through r * (...)
            dgh[r, 2 * hidden + j] = dgi[r, 2 * hidden + j] * ws[0, r, j] + gws[3, r, j]
        for j in range(hidden):
            rr = ws[0, r, j]
            dgi[r, j] = (dgi[r, 2 * hidden + j] * ws[3, r, j] + gws[0, r, j]) * (rr * (one - rr))
        for j in range(hidden):
            z = ws[1, r, j]
            dgi[r, hidden + j] = (dh[r, j] * (h_prev[r, j] - ws[2, r, j]) + gws[1, r, j]) * (z * (one - z))
        for k in range(2 * hidden):  # r and z sum gi and gh alike
            dgh[r, k] = dgi[r, k]
        for j in range(hidden):
            dh[r, j] *= ws[1, r, j]


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def tanh_backward__DTYPE(dh, h, dgi):
    batch, hidden = dh.shape
    for r in range(batch):
        for j in range(hidden):
            dgi[r, j] = dh[r, j] * (FLOAT(1.0) - h[r, j] * h[r, j])
'''


def source() -> str:
    """The module's source: the exps, then the loops for float32 and float64."""
    header = "import numpy as np\nfrom numba import njit\n\n\n"
    decorator = '@njit(cache=True, error_model="numpy", fastmath={"contract"})\n'
    exp32 = decorator + fast_exp.python_source("exp32")
    loops = [_TEMPLATE.replace("__DTYPE", "_" + name).replace("FLOAT(", f"np.{name}(")
             .replace("EXP(", exp + "(").replace("TANH_SERIES", repr(TANH_SERIES[name]))
             for name, exp in (("float32", "exp32"), ("float64", "exp64"))]
    return header + exp32 + _EXP64 + "".join(loops)


@functools.cache
def load():
    """The compiled loops (numba is imported, and the loops compiled or loaded from its cache, on the first call)."""
    return fusion.load_source(source())


__all__ = ["TANH_SERIES", "load", "source"]
