"""softmax and log_softmax: composites over a stable max-shifted exponential, with their derivatives in terms of
the result.
"""
from __future__ import annotations

import numpy as np

from .. import rules
from ..meta import shape
from ..schema import FLOAT32_ON_CUDA, Sample, defop
from . import F
from .opmath import large_magnitudes, rounded, widened


# -- softmax ------------------------------------------------------------------------------------------------

def _softmax_family(body):
    """softmax and log_softmax around their ``body(x, dim)``: the input cast to ``dtype=`` (computing in float32
    for half precision and rounding once); a 0-d tensor is treated as one element along dim 0, like PyTorch."""
    def composite(x, dim, dtype=None):
        out = x.dtype if dtype is None else dtype
        x = widened(x, out)
        if x.numel() == 0:
            return rounded(F.clone(x), out)
        result = F.reshape(body(F.reshape(x, (1,)), dim), ()) if x.ndim == 0 else body(x, dim)
        return rounded(result, out)
    return composite


def _softmax_body(x, dim):
    e = F.exp(F.sub(x, F.amax(x, dim, True)))  # shifting by the max keeps exp from overflowing
    return F.div(e, F.sum(e, dim, True))


def _log_softmax_body(x, dim):
    shifted = F.sub(x, F.amax(x, dim, True))
    return F.sub(shifted, F.log(F.sum(F.exp(shifted), dim, True)))


_softmax, _log_softmax = _softmax_family(_softmax_body), _softmax_family(_log_softmax_body)


def _softmax_reference(x, dim, dtype=None):
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return np.ones_like(x)
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def _log_softmax_reference(x, dim, dtype=None):
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return np.zeros_like(x)
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


def _softmax_samples(make, dtype):
    yield Sample((make((3, 5)), 1))
    yield Sample((make((3, 5), low=-100, high=100), 0), note="large magnitudes")
    yield Sample((make((2, 3, 4), noncontiguous=True), -2))
    yield Sample((make(()), 0), note="0-d")
    yield Sample((make((0, 4)), 1), note="empty")
    yield Sample((make((2, 3)), -1), {"dtype": dtype})
    for x in large_magnitudes(make, dtype):
        yield Sample((x, 1), note="large half-precision values: computes in float32")


def _softmax_derivative(grad, dim, result):
    """result * (grad - sum(grad * result)) along dim."""
    if result.ndim == 0:
        return F.zeros_like(grad)
    return F.mul(result, F.sub(grad, F.sum(F.mul(grad, result), dim, True)))


def _log_softmax_derivative(grad, dim, result):
    """grad - softmax * sum(grad) along dim."""
    if result.ndim == 0:
        return F.zeros_like(grad)
    return F.sub(grad, F.mul(F.exp(result), F.sum(grad, dim, True)))


def _softmax_onnx(op_type: str):
    """Softmax or LogSoftmax along ``dim`` (a 0-d input as a vector of one); ``dtype=`` has cast the input."""
    def lower(g, input, dim, dtype):
        if not g.shape_of(input):
            return g.squeeze(g.op(op_type, g.unsqueeze(input, [0]), axis=0), [0])
        return g.op(op_type, input, axis=int(dim))
    return lower


defop("softmax(Tensor input, dim dim, dtype? dtype=None)", "nn", kind="composite",
      derivative=_softmax_derivative,
      promotion=rules.float_or_requested, dtypes="float", meta=lambda x, dim, dtype=None: shape(x),
      composite=_softmax, reference=_softmax_reference, samples=_softmax_samples, autocast=FLOAT32_ON_CUDA,
      onnx=_softmax_onnx("Softmax"),
      doc="exp(x) / sum(exp(x)) along dim, shifted by the max for stability; dtype= casts the input first")
defop("log_softmax(Tensor input, dim dim, dtype? dtype=None)", "nn", kind="composite",
      derivative=_log_softmax_derivative, promotion=rules.float_or_requested, dtypes="float", meta=lambda x, dim, dtype=None: shape(x),
      composite=_log_softmax, reference=_log_softmax_reference, samples=_softmax_samples, autocast=FLOAT32_ON_CUDA,
      onnx=_softmax_onnx("LogSoftmax"),
      doc="log(softmax(x)) computed as x - max - log(sum(exp(x - max)))")
