"""The normalization ops: layer_norm, group_norm, native_batch_norm and batch_norm.

Each is a composite in Ember ops that declares its derivative: the closed-form gradient of a standardization,
so the graph keeps the input and per-row statistics instead of four full-size intermediates. They compute in
float32 for half-precision inputs and round once at the end, as PyTorch does. The derivatives are written in
Ember ops from saved inputs or outputs still attached to the graph, so they are differentiable in turn.

``batch_norm`` declares no derivative of its own: it is a thin composite over ``native_batch_norm``
(PyTorch's op of that name: output, mean and 1/std per channel), whose derivative reads the
statistics from those outputs. The running statistics are therefore never saved for backward, so
updating them in place in the next training step cannot invalidate a graph still waiting for its
backward (two forward passes, then one backward, as a GAN discriminator does); and in evaluation the
gradient uses the statistics its forward used.
"""
from __future__ import annotations

import math

import numpy as np

from ...execution import links
from ...schema.meta import require, shape
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from ..elementwise.opmath import large_magnitudes, opmath_dtype, rounded, widened
from .samples import unit_weights
from ...schema.errors import ArgumentError


# -- shared by the normalizations ----------------------------------------------------------------------

def _like_input(rt, op, args):
    """The output keeps the input's dtype, whatever the dtypes of the weights or running statistics."""
    x = args["input"]
    if not hasattr(x, "dtype"):
        raise TypeError(f"{op.name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    dt = x.dtype
    return dt, dt


def _standardize(x, dims: tuple, eps: float):
    """(x - mean) / sqrt(var + eps) over dims (biased variance) -> (that, mean, var, 1 / sqrt(var + eps))."""
    mean = F.mean(x, dims, True)
    centered = F.sub(x, mean)
    var = F.mean(F.mul(centered, centered), dims, True)
    invstd = F.rsqrt(F.add(var, eps))
    return F.mul(centered, invstd), mean, var, invstd


def _standardize_backward(g, xhat, invstd, dims: tuple):
    """The vector-Jacobian product of x -> standardize(x) over dims: invstd (g - mean g - xhat mean(g xhat))."""
    inner = F.add(F.mean(g, dims, True), F.mul(xhat, F.mean(F.mul(g, xhat), dims, True)))
    return F.mul(invstd, F.sub(g, inner))


def _wants(t) -> bool:
    """Whether the backward must produce a gradient for this saved input (PyTorch's output_mask): the
    input gradient of a normalization is its dearest part, and a first layer's input needs none."""
    return t is not None and t.requires_grad


def _check_affine(op_name: str, name: str, t, expected: tuple, why: str) -> None:
    if t is not None:
        require(shape(t) == expected, op_name, f"{name} must have shape {expected} {why}", t)


def _channels(t, ndim: int):
    """A per-channel vector (C,) as (1, C, 1, ...) for an (N, C, *) input."""
    return F.reshape(t, (1, t.shape[0]) + (1,) * (ndim - 2))


def _not_channel(ndim: int) -> tuple:
    return (0,) + tuple(range(2, ndim))


def _per_channel_affine(x, weight, bias):
    if weight is not None:
        x = F.mul(x, _channels(weight, x.ndim))
    if bias is not None:
        x = F.add(x, _channels(bias, x.ndim))
    return x


# -- layer_norm ---------------------------------------------------------------------------------------

def _check_layer_norm(op_name: str, x, normalized_shape, weight=None, bias=None) -> tuple:
    """normalized_shape as a tuple, once it has been checked against the input, weight and bias."""
    normalized = tuple(normalized_shape)
    require(len(normalized) >= 1, op_name, "normalized_shape must name at least one dimension", x)
    require(shape(x)[len(shape(x)) - len(normalized):] == normalized and len(shape(x)) >= len(normalized),
            op_name, f"expected an input whose last dims are normalized_shape={list(normalized)}", x)
    _check_affine(op_name, "weight", weight, normalized, "(normalized_shape)")
    _check_affine(op_name, "bias", bias, normalized, "(normalized_shape)")
    return normalized


def _layer_norm_meta(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    _check_layer_norm("layer_norm", x, normalized_shape, weight, bias)
    return shape(x)


def _trailing(ndim: int, normalized_shape) -> tuple:
    return tuple(range(ndim - len(normalized_shape), ndim))


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    xhat = _standardize(widened(x), _trailing(x.ndim, normalized_shape), eps)[0]
    if weight is not None:
        xhat = F.mul(xhat, weight)
    if bias is not None:
        xhat = F.add(xhat, bias)
    return xhat if xhat.dtype is x.dtype else F.to_dtype(xhat, x.dtype)


def _layer_norm_derivative(grad, input, normalized_shape, weight, bias, eps):
    """layer_norm_backward's three gradients, each kept where its input needs one."""
    grads = F.layer_norm_backward(grad, input, normalized_shape, weight, eps)
    return tuple(g if _wants(t) else None for g, t in zip(grads, (input, weight, bias)))


def _layer_norm_reference(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    count = len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else 1
    axes = tuple(range(x.ndim - count, x.ndim))
    x = np.asarray(x, np.float64)
    out = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return out * (1 if weight is None else weight) + (0 if bias is None else bias)


def _layer_norm_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((3, 5)), (5,), w(5), w(5)))
    yield Sample((make((2, 3, 4)), (3, 4), w(3, 4)), note="two normalized dims, no bias")
    yield Sample((make((2, 3, 4), noncontiguous=True), [4]), note="no affine, non-contiguous")
    yield Sample((make((4, 6)), 6, None, w(6)), {"eps": 0.1}, note="int normalized_shape, bias only")
    yield Sample((make((5,)), (5,), w(5), w(5)), note="1-D")
    yield Sample((make((0, 3)), (3,), w(3), w(3)), note="empty batch")
    for x in large_magnitudes(make, dtype):
        yield Sample((x, (16,), w(16), w(16)), note="large half-precision values: statistics in float32")


def _layer_norm_onnx(g, input, normalized_shape, weight, bias, eps):
    """LayerNormalization over the trailing dims; it needs a scale, so ones stand in for a missing weight. A
    missing bias is left out of the inputs (onnxruntime crashes on an empty trailing name there)."""
    normalized = [int(n) for n in g.static(normalized_shape, "normalized_shape")]
    scale = weight if weight is not None else g.const(np.ones(normalized), g.compute)
    operands = (input, scale) if bias is None else (input, scale, bias)
    return g.op("LayerNormalization", *operands, axis=-len(normalized), epsilon=float(eps))


defop("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-5)",
      "nn", kind="composite", promotion=_like_input, dtypes="float", meta=_layer_norm_meta, composite=_layer_norm,
      derivative=_layer_norm_derivative, autocast=FLOAT32_ON_CUDA,
      reference=_layer_norm_reference, samples=_layer_norm_samples, method=False, onnx=_layer_norm_onnx,
      doc="standardizes over the last len(normalized_shape) dims (biased variance), then weight * x + bias")


# -- layer_norm_backward --------------------------------------------------------------------------------

def _layer_norm_backward_meta(grad_output, input, normalized_shape, weight=None, eps=1e-5):
    normalized = _check_layer_norm("layer_norm_backward", input, normalized_shape, weight)
    require(shape(grad_output) == shape(input), "layer_norm_backward",
            f"grad_output must have the input's shape {shape(input)}", grad_output, input)
    return shape(input), normalized, normalized


def _layer_norm_backward_promotion(rt, op, args):
    """grad_input in the input's dtype; the sums over rows for the weight and bias in its opmath dtype, so that
    a float32 weight beside a half-precision input (autocast) gets an unrounded gradient."""
    dt = _like_input(rt, op, args)[0]
    return dt, (dt, opmath_dtype(dt), opmath_dtype(dt))


def _summed_over_rows(t, normalized_ndim: int):
    """``t`` summed over its leading dims, down to normalized_shape (a copy where it has none: an output never
    aliases an input)."""
    leading = tuple(range(t.ndim - normalized_ndim))
    return F.sum(t, leading) if leading else F.clone(t)


def _layer_norm_backward(grad_output, input, normalized_shape, weight=None, eps=1e-5):
    """The closed form from the standardization, recomputed from the input (layer_norm saves no statistics).
    Written in Ember ops, it runs on every backend and is differentiable in turn (double backward)."""
    dims = _trailing(input.ndim, normalized_shape)
    xhat, _, _, invstd = _standardize(widened(input), dims, eps)
    g = widened(grad_output)
    grad_input = _standardize_backward(g if weight is None else F.mul(g, weight), xhat, invstd, dims)
    grad_weight = _summed_over_rows(F.mul(g, xhat), len(dims))
    grad_bias = _summed_over_rows(g, len(dims))
    return rounded(grad_input, input.dtype), grad_weight, grad_bias


def _layer_norm_backward_reference(grad_output, x, normalized_shape, weight=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    leading = tuple(range(x.ndim - len(normalized_shape)))
    x, g = np.asarray(x, np.float64), np.asarray(grad_output, np.float64)
    invstd = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    xhat = (x - x.mean(axes, keepdims=True)) * invstd
    scaled = g if weight is None else g * np.asarray(weight, np.float64)
    grad_input = invstd * (scaled - scaled.mean(axes, keepdims=True)
                           - xhat * (scaled * xhat).mean(axes, keepdims=True))
    return grad_input, (g * xhat).sum(leading), g.sum(leading)


def _layer_norm_backward_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((3, 5)), make((3, 5)), (5,), w(5)))
    yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4)), [3, 4]), {"eps": 0.1},
                 note="two normalized dims, no weight, non-contiguous")
    yield Sample((make((5,)), make((5,)), (5,), w(5)), note="1-D: no rows to sum over")
    yield Sample((make((0, 3)), make((0, 3)), (3,), w(3)), note="empty batch")


defop("layer_norm_backward(Tensor grad_output, Tensor input, int[] normalized_shape, Tensor? weight=None, "
      "float eps=1e-5)", "nn", kind="composite", promotion=_layer_norm_backward_promotion, dtypes="float",
      outputs=("grad_input", "grad_weight", "grad_bias"), meta=_layer_norm_backward_meta,
      composite=_layer_norm_backward, reference=_layer_norm_backward_reference,
      samples=_layer_norm_backward_samples, method=False,
      doc="the gradients of layer_norm with respect to its input, weight and bias (PyTorch's "
          "native_layer_norm_backward, recomputing the statistics from the input); all three are always "
          "computed: the two sums over rows cost little next to the input's gradient")


# -- group_norm ----------------------------------------------------------------------------------------

def _group_norm_meta(x, num_groups, weight=None, bias=None, eps=1e-5):
    require(len(shape(x)) >= 2, "group_norm", "expected an input of shape (N, C, *)", x)
    channels = shape(x)[1]
    require(num_groups > 0 and channels % num_groups == 0, "group_norm",
            f"the number of channels {channels} must be divisible by num_groups={num_groups}", x)
    _check_affine("group_norm", "weight", weight, (channels,), f"to match the input's {channels} channels")
    _check_affine("group_norm", "bias", bias, (channels,), f"to match the input's {channels} channels")
    return shape(x)


def _grouped(x, num_groups: int):
    """(N, C, *) -> (N, G, C / G * prod(*)): each group's values on one row."""
    return F.reshape(x, (x.shape[0], num_groups, x.shape[1] // num_groups * math.prod(x.shape[2:])))


def _group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    xhat = F.reshape(_standardize(_grouped(widened(x), num_groups), (2,), eps)[0], tuple(x.shape))
    out = _per_channel_affine(xhat, weight, bias)
    return out if out.dtype is x.dtype else F.to_dtype(out, x.dtype)


def _group_norm_derivative(grad, input, num_groups, weight, bias, eps):
    xhat, _, _, invstd = _standardize(_grouped(widened(input), num_groups), (2,), eps)
    g = widened(grad)
    dims = _not_channel(input.ndim)
    grad_input = grad_weight = grad_bias = None
    if _wants(input):
        scaled = g if weight is None else F.mul(g, _channels(weight, input.ndim))
        grad_input = F.reshape(_standardize_backward(_grouped(scaled, num_groups), xhat, invstd, (2,)),
                               tuple(input.shape))
    if _wants(weight):
        grad_weight = F.sum(F.mul(g, F.reshape(xhat, tuple(input.shape))), dims)
    if _wants(bias):
        grad_bias = F.sum(g, dims)
    return grad_input, grad_weight, grad_bias


def _group_norm_reference(x, num_groups, weight=None, bias=None, eps=1e-5):
    x = np.asarray(x, np.float64)
    if x.size == 0:
        return x.copy()
    rows = x.reshape(x.shape[0], num_groups, -1)
    out = ((rows - rows.mean(2, keepdims=True)) / np.sqrt(rows.var(2, keepdims=True) + eps)).reshape(x.shape)
    channel = (-1,) + (1,) * (x.ndim - 2)
    scale = 1 if weight is None else np.reshape(weight, channel)
    return out * scale + (0 if bias is None else np.reshape(bias, channel))


def _group_norm_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((2, 6, 4)), 3, w(6), w(6)))
    yield Sample((make((2, 4, 3, 3)), 2, w(4)), note="2-D spatial, no bias")
    yield Sample((make((3, 4), noncontiguous=True), 4), note="no spatial dims, one channel per group")
    yield Sample((make((2, 6, 5)), 1, w(6), w(6)), {"eps": 0.1}, note="one group")
    yield Sample((make((0, 4, 2)), 2, w(4), w(4)), note="empty batch")
    for x in large_magnitudes(make, dtype, (2, 4, 8)):
        yield Sample((x, 2, w(4), w(4)), note="large half-precision values: statistics in float32")


def _group_norm_onnx(g, input, num_groups, weight, bias, eps):
    """The composite's formula: standardize rows of (N, G, C / G * spatial), then the per-channel affine
    (ONNX GroupNormalization's scale is per group before opset 21)."""
    sizes = g.shape_of(input)
    row = int(g.static(sizes[1], "channels")) // num_groups
    for size in sizes[2:]:
        row = row * size
    rows = g.op("Reshape", input, g.ints([sizes[0], num_groups, row]))
    centered = g.op("Sub", rows, g.reduce("ReduceMean", rows, [2], True))
    var = g.reduce("ReduceMean", g.op("Mul", centered, centered), [2], True)
    xhat = g.op("Div", centered, g.op("Sqrt", g.op("Add", var, g.const(eps, g.compute))))
    out = g.op("Reshape", xhat, g.op("Shape", input))
    channel = g.ints([-1] + [1] * (len(sizes) - 2))
    if weight is not None:
        out = g.op("Mul", out, g.op("Reshape", weight, channel))
    if bias is not None:
        out = g.op("Add", out, g.op("Reshape", bias, channel))
    return out


defop("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-5)", "nn",
      kind="composite", promotion=_like_input, dtypes="float", meta=_group_norm_meta, composite=_group_norm,
      derivative=_group_norm_derivative, autocast=FLOAT32_ON_CUDA,
      reference=_group_norm_reference, samples=_group_norm_samples, method=False, onnx=_group_norm_onnx,
      doc="standardizes each group of C / num_groups channels of an (N, C, *) input, then per-channel affine")


# -- batch_norm --------------------------------------------------------------------------------------

def _native_batch_norm_promotion(rt, op, args):
    dt = args["input"].dtype
    return dt, (dt, opmath_dtype(dt), opmath_dtype(dt))


def _batch_norm_check(op_name: str, x, running_mean, running_var, weight, bias, training):
    require(len(shape(x)) >= 2, op_name, "expected an input of shape (N, C, *)", x)
    channels = shape(x)[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_affine(op_name, name, t, (channels,), f"to match the input's {channels} channels (dim 1)")
    if not training and (running_mean is None or running_var is None):
        raise ArgumentError(f"{op_name}: running_mean and running_var must be given in evaluation mode "
                            f"(training=False)")
    if training and math.prod(shape(x)) // max(channels, 1) == 1:
        raise ArgumentError(f"{op_name}: expected more than 1 value per channel when training, got input of "
                            f"shape {shape(x)}")


def _native_batch_norm_meta(x, weight, bias, running_mean, running_var, training, momentum, eps):
    _batch_norm_check("native_batch_norm", x, running_mean, running_var, weight, bias, training)
    return shape(x), shape(x)[1:2], shape(x)[1:2]


def _batch_norm_meta(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    _batch_norm_check("batch_norm", x, running_mean, running_var, weight, bias, training)
    return shape(x)


def _no_grad():
    return links.recorder.no_grad()


def _update_running(stat, value, momentum: float) -> None:
    """stat = (1 - momentum) stat + momentum value, in place and outside autograd."""
    with _no_grad():
        F.copy_(stat, F.add(F.mul(widened(stat), 1.0 - momentum), F.mul(value, momentum)))


def _native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    xf = widened(x)
    dims = _not_channel(x.ndim)
    if training:
        xhat, mean, var, invstd = _standardize(xf, dims, eps)
        mean, var, invstd = (F.reshape(t, (x.shape[1],)) for t in (mean, var, invstd))
        count = math.prod(x.shape) // x.shape[1]
        if count > 1:  # an empty batch has no statistics to move towards
            if running_mean is not None:
                _update_running(running_mean, mean, momentum)
            if running_var is not None:  # the running variance is the unbiased one
                _update_running(running_var, F.mul(var, count / (count - 1)), momentum)
    else:
        mean = F.clone(widened(running_mean, x.dtype))  # fresh outputs, never the buffers themselves
        invstd = F.rsqrt(F.add(widened(running_var, x.dtype), eps))
        xhat = F.mul(F.sub(xf, _channels(mean, x.ndim)), _channels(invstd, x.ndim))
    out = _per_channel_affine(xhat, weight, bias)
    return (out if out.dtype is x.dtype else F.to_dtype(out, x.dtype)), mean, invstd


def _native_batch_norm_derivative(grads, input, weight, bias, training, results):
    """Through all three outputs. The statistics come from the saved outputs (not recomputed, and still
    attached to this node, so that double backward reaches them). In training, save_mean adds
    grad_mean / n to every input (d mean / dx = 1/n) and save_invstd adds -grad_invstd invstd^2 xhat / n;
    these per-channel terms join the standardization's own shift and slope. In evaluation the statistics
    are the running ones, constants."""
    grad, grad_mean, grad_invstd = grads
    dims, ndim = _not_channel(input.ndim), input.ndim
    mean, invstd = (_channels(t, ndim) for t in results[1:])
    xhat = F.mul(F.sub(widened(input), mean), invstd)
    g = widened(grad)
    grad_input = grad_weight = grad_bias = None
    if _wants(input):
        scaled = g if weight is None else F.mul(g, _channels(weight, ndim))
        if training:
            n = math.prod(input.shape) // input.shape[1]
            shift = F.sub(F.mul(invstd, F.mean(scaled, dims, True)), F.div(_channels(grad_mean, ndim), n))
            slope = F.add(F.mul(invstd, F.mean(F.mul(scaled, xhat), dims, True)),
                          F.div(F.mul(_channels(grad_invstd, ndim), F.mul(invstd, invstd)), n))
            grad_input = F.sub(F.sub(F.mul(invstd, scaled), shift), F.mul(xhat, slope))
        else:
            grad_input = F.mul(scaled, invstd)
    if _wants(weight):
        grad_weight = F.sum(F.mul(g, xhat), dims)
    if _wants(bias):
        grad_bias = F.sum(g, dims)
    return grad_input, grad_weight, grad_bias, None, None


def _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps):
    """native_batch_norm's output; when autograd records, it records native_batch_norm's node."""
    return F.native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def _batch_norm_reference(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                          eps=1e-5):
    return _native_batch_norm_reference(x, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def _native_batch_norm_reference(x, weight, bias, running_mean, running_var, training, momentum, eps):
    x = np.asarray(x, np.float64)
    axes = _not_channel(x.ndim)
    channel = (1, -1) + (1,) * (x.ndim - 2)
    if training and x.size == 0:  # the mean of nothing
        mean = var = np.full(x.shape[1], np.nan)
    elif training:
        mean, var = x.mean(axes), x.var(axes)
    else:
        mean, var = np.asarray(running_mean, np.float64), np.asarray(running_var, np.float64)
    invstd = 1 / np.sqrt(var + eps)
    out = (x - mean.reshape(channel)) * invstd.reshape(channel)
    out = out * (1 if weight is None else np.reshape(weight, channel))
    out = out + (0 if bias is None else np.reshape(bias, channel))
    return out, mean, invstd


def _batch_norm_samples(make, dtype):
    w = unit_weights(make)

    def var(c):
        return make((c,), low=0.5, high=2.0)
    yield Sample((make((4, 3)), w(3), var(3), w(3), w(3)), note="evaluation")
    yield Sample((make((4, 3, 5)), None, None, w(3)), {"training": True}, note="training without running stats")
    yield Sample((make((2, 3, 4, 4)), w(3), var(3), w(3), w(3), True, 0.3, 1e-3), note="training, updates stats")
    yield Sample((make((2, 3, 4, 4), noncontiguous=True), w(3), var(3)), note="evaluation, no affine")
    yield Sample((make((0, 2, 3)), w(2), var(2), w(2), w(2), True), note="empty batch")
    for x in large_magnitudes(make, dtype, (8, 3, 4)):
        yield Sample((x, None, None, w(3)), {"training": True}, note="large half-precision values: statistics in float32")


def _native_batch_norm_samples(make, dtype):
    w = unit_weights(make)

    def var(c):
        return make((c,), low=0.5, high=2.0)
    yield Sample((make((4, 3)), w(3), w(3), w(3), var(3), False, 0.1, 1e-5), note="evaluation")
    yield Sample((make((4, 3, 5)), w(3), None, None, None, True, 0.1, 1e-5), note="training without running stats")
    yield Sample((make((2, 3, 4, 4)), w(3), w(3), w(3), var(3), True, 0.3, 1e-3), note="training, updates stats")
    yield Sample((make((2, 3, 4, 4), noncontiguous=True), None, None, w(3), var(3), False, 0.1, 1e-5),
                 note="evaluation, no affine")


def _batch_norm_onnx_output(g, input, running_mean, running_var, weight, bias, training, eps) -> str:
    """BatchNormalization with the running statistics; batch statistics (training) have no ONNX inference form."""
    if training:
        g.fail("batch normalization in training mode (batch statistics, running-statistics updates) has no ONNX "
               "form; call model.eval() before exporting")
    channels = int(g.static(g.shape_of(input)[1], "channels"))
    scale = weight if weight is not None else g.const(np.ones(channels), g.compute)
    shift = bias if bias is not None else g.const(np.zeros(channels), g.compute)
    return g.op("BatchNormalization", input, scale, shift, running_mean, running_var, epsilon=float(eps))


def _native_batch_norm_onnx(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    output = _batch_norm_onnx_output(g, input, running_mean, running_var, weight, bias, training, eps)
    invstd = g.op("Reciprocal", g.op("Sqrt", g.op("Add", running_var, g.const(eps, g.compute))))
    stats = [g.op("Identity", running_mean), invstd]
    return (output,) + tuple(t if g.compute is dt else g.cast(t, dt) for t, dt in zip(stats, g.out_dtypes[1:]))


def _batch_norm_onnx(g, input, running_mean, running_var, weight, bias, training, momentum, eps):
    return _batch_norm_onnx_output(g, input, running_mean, running_var, weight, bias, training, eps)


defop("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
      "bool training, float momentum, float eps)", "nn", kind="composite", promotion=_native_batch_norm_promotion,
      dtypes="float", outputs=("output", "save_mean", "save_invstd"),
      nondifferentiable_inputs=("running_mean", "running_var"),
      meta=_native_batch_norm_meta,
      composite=_native_batch_norm,
      derivative=_native_batch_norm_derivative,
      reference=_native_batch_norm_reference, samples=_native_batch_norm_samples, method=False,
      onnx=_native_batch_norm_onnx,
      doc="batch normalization of an (N, C, *) input plus the mean and 1/std it used (per channel); in "
          "training it moves running_mean and running_var (unbiased) towards the batch's, in place")

defop("batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, "
      "bool training=False, float momentum=0.1, float eps=1e-5)", "nn", kind="composite", promotion=_like_input,
      dtypes="float", nondifferentiable_inputs=("running_mean", "running_var"),
      meta=_batch_norm_meta,
      composite=_batch_norm,
      reference=_batch_norm_reference, samples=_batch_norm_samples, method=False, onnx=_batch_norm_onnx,
      doc="normalizes each channel of an (N, C, *) input by the batch's statistics (training, which also "
          "updates the running ones in place) or by the running statistics (evaluation)")


# -- instance_norm --------------------------------------------------------------------------------------------

def _instance_norm_meta(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    require(len(shape(x)) >= 3, "instance_norm", "expected an input of shape (N, C, *) with at least one spatial "
            "dim", x)
    channels = shape(x)[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_affine("instance_norm", name, t, (channels,), f"to match the input's {channels} channels (dim 1)")
    if use_input_stats and math.prod(shape(x)[2:]) == 1:
        raise ArgumentError(f"instance_norm: Expected more than 1 spatial element when training, got input size "
                            f"{list(shape(x))}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise ArgumentError("instance_norm: Expected running_mean and running_var to be defined when use_input_stats "
                            "is false")
    return shape(x)


def _instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """Standardizes each channel of each sample over its spatial dims; the running statistics move towards the
    batch's average of the per-sample ones (the variance unbiased), as PyTorch's batch-norm-based kernel does."""
    xf, spatial = widened(x), tuple(range(2, x.ndim))
    if use_input_stats:
        xhat, mean, var, _ = _standardize(xf, spatial, eps)
        count = math.prod(x.shape[2:])
        if x.shape[0] > 0:
            if running_mean is not None:
                _update_running(running_mean, F.mean(F.reshape(mean, x.shape[:2]), 0), momentum)
            if running_var is not None:
                unbiased = F.mul(F.reshape(var, x.shape[:2]), count / (count - 1))
                _update_running(running_var, F.mean(unbiased, 0), momentum)
    else:
        mean = _channels(widened(running_mean, x.dtype), x.ndim)
        invstd = F.rsqrt(F.add(_channels(widened(running_var, x.dtype), x.ndim), eps))
        xhat = F.mul(F.sub(xf, mean), invstd)
    out = _per_channel_affine(xhat, weight, bias)
    return out if out.dtype is x.dtype else F.to_dtype(out, x.dtype)


def _instance_norm_reference(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                             cudnn_enabled):
    x = np.asarray(x, np.float64)
    channel = (1, -1) + (1,) * (x.ndim - 2)
    if use_input_stats:
        axes = tuple(range(2, x.ndim))
        mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    else:
        mean, var = np.reshape(running_mean, channel), np.reshape(running_var, channel)
    out = (x - mean) / np.sqrt(var + eps)
    out = out * (1 if weight is None else np.reshape(weight, channel))
    return out + (0 if bias is None else np.reshape(bias, channel))


def _instance_norm_samples(make, dtype):
    w = unit_weights(make)

    def var(c):
        return make((c,), low=0.5, high=2.0)
    yield Sample((make((2, 3, 5)), None, None, None, None, True, 0.1, 1e-5, False), note="no affine")
    yield Sample((make((2, 3, 4, 4), noncontiguous=True), w(3), w(3), w(3), var(3), True, 0.3, 1e-5, False),
                 note="affine, updates running statistics")
    yield Sample((make((3, 2, 2, 3, 2)), w(2), w(2), w(2), var(2), False, 0.1, 1e-3, False),
                 note="running statistics, 3-d")


defop("instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
      "bool use_input_stats, float momentum, float eps, bool cudnn_enabled)", "nn", kind="composite",
      promotion=_like_input, dtypes="float", nondifferentiable_inputs=("running_mean", "running_var"),
      meta=_instance_norm_meta, composite=_instance_norm, reference=_instance_norm_reference,
      samples=_instance_norm_samples, method=False, autocast=FLOAT32_ON_CUDA,
      doc="normalizes each channel of each sample of an (N, C, *) input over its spatial dims (or by the running "
          "statistics when not use_input_stats), then scales and shifts per channel; the argument order is "
          "torch.instance_norm's (nn.functional.instance_norm has its own), and cudnn_enabled has no effect")


# -- rms_norm ---------------------------------------------------------------------------------------------------

#: float32's and float64's machine epsilon: rms_norm's default eps, taken in the dtype it computes in
_EPSILON = {4: float(np.finfo(np.float32).eps), 8: float(np.finfo(np.float64).eps)}


def _rms_norm_meta(x, normalized_shape, weight=None, eps=None):
    normalized = tuple(normalized_shape)
    require(len(shape(x)) >= len(normalized) and shape(x)[len(shape(x)) - len(normalized):] == normalized,
            "rms_norm", f"expected an input whose last dims are normalized_shape={list(normalized)}", x)
    _check_affine("rms_norm", "weight", weight, normalized, "(normalized_shape)")
    return shape(x)


def _rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x ** 2) + eps) over the last dims, computed in float32 for half precision, rounded, then
    scaled by weight."""
    xf = widened(x)
    if eps is None:
        eps = _EPSILON[xf.dtype.itemsize]
    dims = _trailing(x.ndim, normalized_shape)
    out = F.mul(xf, F.rsqrt(F.add(F.mean(F.mul(xf, xf), dims, True), eps)))
    out = out if out.dtype is x.dtype else F.to_dtype(out, x.dtype)
    return out if weight is None else F.mul(out, weight)


def _rms_norm_reference(x, normalized_shape, weight=None, eps=None):
    if eps is None:  # the epsilon of the dtype it computes in: float64, or float32 for every narrower float
        eps = np.finfo(np.float64 if np.asarray(x).dtype == np.float64 else np.float32).eps
    x = np.asarray(x, np.float64)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    out = x / np.sqrt((x * x).mean(axes, keepdims=True) + eps)
    return out if weight is None else out * weight


def _rms_norm_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((4, 5)), [5]), note="last dim, no weight")
    yield Sample((make((2, 3, 4), noncontiguous=True), [3, 4], make((3, 4), low=0.5, high=2)), note="two dims")
    yield Sample((make((3, 6)), [6], w(6), 1e-3), note="eps")


defop("rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)", "nn",
      kind="composite", promotion=_like_input, dtypes="float", meta=_rms_norm_meta, composite=_rms_norm,
      reference=_rms_norm_reference, samples=_rms_norm_samples, method=False,
      doc="root-mean-square normalization over the last len(normalized_shape) dims (Zhang & Sennrich, 2019); "
          "eps=None is the machine epsilon of the dtype it computes in")


# -- local_response_norm ------------------------------------------------------------------------------------

def _local_response_norm_meta(x, size, alpha=1e-4, beta=0.75, k=1.0):
    if len(shape(x)) < 3:
        raise ArgumentError(f"local_response_norm: Expected 3D or higher dimensionality input (got {len(shape(x))} "
                            f"dimensions)")
    return shape(x)


def _channel_window_sum(t, before: int, after: int):
    """sum of t over channels c - before .. c + after (dim 1, zeros beyond the edges)."""
    channels = t.shape[1]
    padding = [F.zeros((t.shape[0], n) + tuple(t.shape[2:]), dtype=t.dtype, device=t.device)
               for n in (before, after)]
    padded = F.cat([padding[0], t, padding[1]], 1)
    total = F.slice(padded, 1, 0, channels)
    for offset in range(1, before + after + 1):
        total = F.add(total, F.slice(padded, 1, offset, offset + channels))
    return total


def _local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x ** 2 over the size channels around each) ** beta, the window padded with zeros
    (size // 2 channels before, (size - 1) // 2 after), as PyTorch's average-pool form."""
    if x.numel() == 0:
        return x
    window = _channel_window_sum(F.mul(x, x), size // 2, (size - 1) // 2)
    return F.div(x, F.pow(F.add(F.mul(window, alpha / size), k), beta))


def _local_response_norm_reference(x, size, alpha=1e-4, beta=0.75, k=1.0):
    x = np.asarray(x, np.float64)
    channels, before = x.shape[1], size // 2
    padded = np.pad(x * x, [(0, 0), (before, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(padded[:, i:i + channels] for i in range(size))
    return x / (k + alpha * window / size) ** beta


def _local_response_norm_samples(make, dtype):
    yield Sample((make((2, 5, 3)), 3), note="3-d")
    yield Sample((make((2, 6, 3, 3), noncontiguous=True), 4, 0.1, 0.5, 2.0), note="even size, 4-d")
    yield Sample((make((1, 4, 2, 2, 2)), 2, 1e-2), note="5-d")


defop("local_response_norm(Tensor input, int size, float alpha=1e-4, float beta=0.75, float k=1.0)", "nn",
      kind="composite", promotion=_like_input, dtypes="float", meta=_local_response_norm_meta,
      composite=_local_response_norm, reference=_local_response_norm_reference,
      samples=_local_response_norm_samples, method=False,
      doc="divides each value by (k + alpha * the mean square over the size neighbouring channels) ** beta "
          "(Krizhevsky et al., 2012)")
