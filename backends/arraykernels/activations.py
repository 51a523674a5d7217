"""Fused versions of the activation composites (used when no gradient is recorded), and softmax.

Branch-free forms throughout: NumPy's where (and copyto with where=) cost ~5 ns an element on random signs.
Half-precision inputs compute in float32 and are rounded once at the end.
"""
from __future__ import annotations

import numpy as np

from .common import in_float32
from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    erf = lib.erf
    OUT = lib.array_out  # noqa: N806  (out=OUT: an array even for 0-d input)
    widened = in_float32(lib)

    def _softmax_core(a, dim, log: bool):
        if a.ndim == 0:
            return xp.zeros_like(a) if log else xp.ones_like(a)
        if a.size == 0:
            return a.copy()
        shifted = xp.subtract(a, xp.max(a, axis=dim, keepdims=True))
        if log:
            shifted -= xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True))
            return shifted
        e = xp.exp(shifted, out=shifted)  # in place: one temporary for the whole op
        e /= xp.sum(e, axis=dim, keepdims=True)
        return e

    @widened
    def _softmax(a, dim, dtype=None):
        return _softmax_core(a, dim, log=False)

    @widened
    def _log_softmax(a, dim, dtype=None):
        return _softmax_core(a, dim, log=True)

    @widened
    def _softmax_backward(grad, y, dim):
        if y.ndim == 0:
            return xp.zeros_like(grad)
        out = grad * y  # one temporary: grad * y, then grad - its sum, then times y, in place
        total = out.sum(axis=dim, keepdims=True)
        xp.subtract(grad, total, out=out)
        out *= y
        return out

    @widened
    def _log_softmax_backward(grad, y, dim):
        if y.ndim == 0:
            return xp.zeros_like(grad)
        out = xp.exp(y)
        out *= grad.sum(axis=dim, keepdims=True)
        return xp.subtract(grad, out, out=out)

    @widened
    def _relu(a):
        return xp.maximum(a, 0, dtype=a.dtype)  # NaN propagates; -inf gives 0

    def _threshold_backward(grad, a, threshold):
        # a 0/1 mask of grad's dtype times grad: several times faster than where() or a bool operand
        mask = xp.greater(a, threshold, out=OUT).astype(grad.dtype)
        mask *= grad
        return mask

    @widened
    def _leaky_relu(a, negative_slope):
        if negative_slope == 0:
            return xp.maximum(a, 0)
        # x > 0 keeps x and x < 0 takes slope * x: the larger of the two for slope < 1, the smaller above 1
        pick = xp.maximum if negative_slope < 1 else xp.minimum
        return pick(a, a * a.dtype.type(negative_slope))

    @widened
    def _elu(a, alpha):
        # max(x, 0) + alpha * expm1(min(x, 0)): one term is zero on each side of 0
        return xp.maximum(a, 0) + xp.expm1(xp.minimum(a, 0)) * a.dtype.type(alpha)

    @widened
    def _gelu(a, approximate):
        if approximate == "tanh":
            inner = xp.tanh((a + a * a * a * a.dtype.type(0.044715)) * a.dtype.type(np.sqrt(2 / np.pi)))
            return a * a.dtype.type(0.5) * (inner + 1)
        return a * a.dtype.type(0.5) * (erf(a * a.dtype.type(1 / np.sqrt(2))) + 1)

    @widened
    def _gelu_backward(grad, a, approximate):
        t = a.dtype.type
        if approximate == "tanh":
            curve = xp.tanh((a + a * a * a * t(0.044715)) * t(np.sqrt(2 / np.pi)))
            slope = (1 - curve * curve) * a * (a * a * t(3 * 0.044715) + 1) * t(0.5 * np.sqrt(2 / np.pi))
            return grad * ((curve + 1) * t(0.5) + slope)
        cdf = (erf(a * t(1 / np.sqrt(2))) + 1) * t(0.5)
        return grad * (cdf + a * xp.exp(a * a * t(-0.5)) * t(1 / np.sqrt(2 * np.pi)))

    @widened
    def _silu(a):
        # x / (1 + exp(-x)): accurate at both ends and several times faster than scipy's expit
        denominator = xp.exp(xp.negative(a), out=OUT)
        denominator += 1
        return xp.divide(a, denominator, out=denominator)

    def _softplus_core(a, beta, threshold):
        """(max(z, 0) + log1p(exp(-|z|))) / beta for z = beta * x, which never overflows; above the threshold
        PyTorch returns x itself, so the log1p term is masked off there (it is finite, so no 0 * inf)."""
        scaled = a * a.dtype.type(beta)
        if threshold < 0:  # x itself can be negative above the threshold: no branch-free form
            soft = (xp.maximum(scaled, 0) + xp.log1p(xp.exp(-xp.abs(scaled)))) / a.dtype.type(beta)
            return xp.where(scaled > threshold, a, soft)
        tail = xp.log1p(xp.exp(-xp.abs(scaled)))
        tail *= scaled <= threshold
        return (xp.maximum(scaled, 0) + tail) / a.dtype.type(beta)

    @widened
    def _softplus(a, beta, threshold):
        return _softplus_core(a, beta, threshold)

    @widened
    def _mish(a):
        return a * xp.tanh(_softplus_core(a, 1.0, 20.0))

    @widened
    def _logsigmoid(a):
        # min(x, 0) - log1p(exp(-|x|)): finite everywhere; scipy's log_expit is over ten times slower
        return xp.minimum(a, 0) - xp.log1p(xp.exp(-xp.abs(a)))

    @widened
    def _hardtanh(a, min_val, max_val):
        if a.dtype.kind in "iu":  # limits outside an integer dtype's range clip to it
            info = np.iinfo(a.dtype)
            min_val, max_val = (min(max(int(v), info.min), info.max) for v in (min_val, max_val))
        return xp.clip(a, a.dtype.type(min_val), a.dtype.type(max_val))  # NaN stays NaN

    return {
        "softmax": _softmax,
        "log_softmax": _log_softmax,
        "softmax_backward": _softmax_backward,
        "log_softmax_backward": _log_softmax_backward,
        "relu": _relu,
        "threshold_backward": _threshold_backward,
        "leaky_relu": _leaky_relu,
        "elu": _elu,
        "gelu": _gelu,
        "gelu_backward": _gelu_backward,
        "silu": _silu,
        "softplus": _softplus,
        "mish": _mish,
        "logsigmoid": _logsigmoid,
        "hardtanh": _hardtanh,
    }
