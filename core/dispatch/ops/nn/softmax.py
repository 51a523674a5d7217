"""softmax and log_softmax: composites over a stable max-shifted exponential, with their derivatives in terms of
the result.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.meta import require, shape
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from ..elementwise.opmath import in_opmath, large_magnitudes, rounded, widened
from ._shared import _log_softmax_reference


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
    return F.softmax_backward(grad, result, dim)


def _log_softmax_derivative(grad, dim, result):
    return F.log_softmax_backward(grad, result, dim)


# -- softmax_backward and log_softmax_backward ---------------------------------------------------------------
# The vector-Jacobian products from the result, as ops of their own so that a backend can run each as one
# kernel. Written in Ember ops, they run on every backend and are differentiable in turn (double backward).

def _softmax_backward(grad_output, output, dim):
    """output * (grad_output - sum(grad_output * output)) along dim."""
    return F.mul(output, F.sub(grad_output, F.sum(F.mul(grad_output, output), dim, True)))


def _log_softmax_backward(grad_output, output, dim):
    """grad_output - softmax * sum(grad_output) along dim, where softmax = exp(output)."""
    return F.sub(grad_output, F.mul(F.exp(output), F.sum(grad_output, dim, True)))


def _softmax_backward_reference(grad_output, output, dim):
    g, y = np.asarray(grad_output, np.float64), np.asarray(output, np.float64)
    return np.zeros_like(g) if y.ndim == 0 else y * (g - np.sum(g * y, axis=dim, keepdims=True))


def _log_softmax_backward_reference(grad_output, output, dim):
    g, y = np.asarray(grad_output, np.float64), np.asarray(output, np.float64)
    return np.zeros_like(g) if y.ndim == 0 else g - np.exp(y) * np.sum(g, axis=dim, keepdims=True)


def _backward_samples(low: float, high: float):
    """Samples with outputs in [low, high): softmax's are probabilities, log_softmax's their logarithms."""
    def samples(make, dtype):
        yield Sample((make((3, 5)), make((3, 5), low=low, high=high), 1))
        yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4), low=low, high=high), -2),
                     note="a middle dim, non-contiguous")
        yield Sample((make(()), make((), low=low, high=high), 0), note="0-d")
        yield Sample((make((0, 4)), make((0, 4), low=low, high=high), 1), note="empty")
    return samples


def _declare_backward(name: str, formula, reference, samples, doc: str) -> None:
    def meta(grad_output, output, dim):
        require(shape(grad_output) == shape(output), name, "grad_output and output must have one shape",
                grad_output, output)
        return shape(output)

    def composite(grad_output, output, dim):
        if output.ndim == 0:  # the function of one element is a constant
            return F.zeros_like(grad_output)
        return formula(grad_output, output, dim)

    defop(f"{name}(Tensor grad_output, Tensor output, dim dim)", "nn", kind="composite", promotion=rules.same,
          dtypes="float", meta=meta, composite=in_opmath(composite), reference=reference, samples=samples,
          method=False, doc=doc)


_declare_backward("softmax_backward", _softmax_backward, _softmax_backward_reference, _backward_samples(0, 1),
                  "the gradient of softmax along dim from its output (PyTorch's _softmax_backward_data): "
                  "output * (grad_output - sum(grad_output * output))")
_declare_backward("log_softmax_backward", _log_softmax_backward, _log_softmax_backward_reference,
                  _backward_samples(-4, 0),
                  "the gradient of log_softmax along dim from its output (PyTorch's _log_softmax_backward_data): "
                  "grad_output - exp(output) * sum(grad_output)")


def _softmax_onnx(op_type: str):
    """Softmax or LogSoftmax along ``dim`` (a 0-d input as a vector of one); ``dtype=`` has cast the input."""
    def lower(g, input, dim, dtype):
        if not g.shape_of(input):
            return g.squeeze(g.op(op_type, g.unsqueeze(input, [0]), axis=0), [0])
        return g.op(op_type, input, axis=int(dim))
    return lower


def _softmax_tangent(tangents, input, dim, dtype, result):
    """y (t - sum(y t)) along dim."""
    t = F.to_dtype(tangents[0], result.dtype)
    return F.mul(result, F.sub(t, F.sum(F.mul(result, t), dim, True)))


def _log_softmax_tangent(tangents, input, dim, dtype, result):
    """t - sum(softmax t) along dim."""
    t = F.to_dtype(tangents[0], result.dtype)
    return F.sub(t, F.sum(F.mul(F.exp(result), t), dim, True))


defop("softmax(Tensor input, dim dim, dtype? dtype=None)", "nn", kind="composite",
      derivative=_softmax_derivative, jvp=_softmax_tangent,
      promotion=rules.float_or_requested, dtypes="float", meta=lambda x, dim, dtype=None: shape(x),
      composite=_softmax, reference=_softmax_reference, samples=_softmax_samples, autocast=FLOAT32_ON_CUDA,
      onnx=_softmax_onnx("Softmax"),
      doc="exp(x) / sum(exp(x)) along dim, shifted by the max for stability; dtype= casts the input first")
defop("log_softmax(Tensor input, dim dim, dtype? dtype=None)", "nn", kind="composite",
      derivative=_log_softmax_derivative, jvp=_log_softmax_tangent, promotion=rules.float_or_requested,
      dtypes="float", meta=lambda x, dim, dtype=None: shape(x),
      composite=_log_softmax, reference=_log_softmax_reference, samples=_softmax_samples, autocast=FLOAT32_ON_CUDA,
      onnx=_softmax_onnx("LogSoftmax"),
      doc="log(softmax(x)) computed as x - max - log(sum(exp(x - max)))")
