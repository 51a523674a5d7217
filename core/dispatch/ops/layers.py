"""Layer ops: linear, bilinear, embedding, the normalizations (batch, layer, group) and dropout.

Every op is a composite written in Ember ops. Those whose decomposition would record many nodes
or keep more than the gradient needs declare their derivative: linear (one matmul per gradient, not
one per batch entry summed afterwards), embedding (row-wise accumulation that skips the padding
row), layer_norm, group_norm and native_batch_norm (the closed-form gradient of a standardization:
the graph keeps the input and per-row statistics instead of four full-size intermediates). The
normalizations compute in float32 for half-precision inputs and round once at the end, as PyTorch
does. Derivatives are written in Ember ops from saved inputs or outputs that are still attached to
the graph, so they are differentiable in turn (double backward).

``batch_norm`` declares no derivative of its own: it is a thin composite over ``native_batch_norm``
(PyTorch's op of that name: output, mean and 1/std per channel), whose derivative reads the
statistics from those outputs. The running statistics are therefore never saved for backward, so
updating them in place in the next training step cannot invalidate a graph still waiting for its
backward (two forward passes, then one backward, as a GAN discriminator does); and in evaluation the
gradient uses the statistics its forward used.

``dropout`` is of category random: its values are not reproducible by a reference, its seeding is.
"""
from __future__ import annotations

import math

import numpy as np

from .. import rules
from .. import links
from ..dispatcher import note_value_read
from ..dtypes import int64
from ..meta import require, shape
from ..schema import FLOAT32_ON_CUDA, Sample, defop
from . import F
from .opmath import large_magnitudes, opmath_dtype, widened
from .value_checks import MISSING, CheckedValues

_HALF_TOLERANCES = {"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}


def _prod(sizes) -> int:
    return math.prod(int(s) for s in sizes)


def _weights(make):
    """Weights in [-1, 1), as layer initialisations give: keeps half-precision sums representable."""
    return lambda *s, **kw: make(s, low=-1, high=1, **kw)


# -- linear -----------------------------------------------------------------------------------------

def _linear_meta(x, weight, bias=None):
    require(len(shape(weight)) == 2, "linear", "expected a 2-D weight (out_features, in_features)", weight)
    require(len(shape(x)) >= 1, "linear", "expected an input with at least one dimension", x)
    out_features, in_features = shape(weight)
    require(shape(x)[-1] == in_features, "linear",
            f"input's last dim {shape(x)[-1]} does not match the weight's in_features {in_features}", x, weight)
    if bias is not None:
        require(shape(bias) in ((), (1,), (out_features,)), "linear",
                f"bias must have {out_features} elements (out_features)", bias)
    return shape(x)[:-1] + (out_features,)


def _linear(x, weight, bias=None):
    out = F.matmul(x, F.transpose(weight, 0, 1))
    return out if bias is None else F.add(out, bias)


def _rows(t):
    """(..., features) -> (rows, features): every leading dim folded into one."""
    return t if t.ndim == 2 else F.reshape(t, (_prod(t.shape[:-1]), t.shape[-1]))


def _linear_weight_derivative(grad, input):
    """sum over every row of grad^T x: one matmul, where matmul's own rule would make one per batch entry."""
    return F.matmul(F.transpose(_rows(grad), 0, 1), _rows(input))


def _linear_samples(make, dtype):
    w = _weights(make)
    yield Sample((make((4, 3)), w(5, 3), make((5,))))
    yield Sample((make((2, 3, 4)), w(2, 4)), note="batch dims, no bias")
    yield Sample((make((3,)), w(4, 3), make((4,))), note="1-D input")
    yield Sample((make((2, 3), noncontiguous=True), w(4, 3, noncontiguous=True), make((4,))), note="non-contiguous")
    yield Sample((make((0, 3)), w(2, 3), make((2,))), note="empty batch")


def _linear_onnx(g, input, weight, bias):
    """Gemm for a matrix input, MatMul with the weight transposed otherwise (constant folding stores it so)."""
    if len(g.shape_of(input)) == 2 and bias is not None:
        return g.op("Gemm", input, weight, bias, transB=1)
    product = g.op("MatMul", input, g.op("Transpose", weight, perm=[1, 0]))
    return product if bias is None else g.op("Add", product, bias)


defop("linear(Tensor input, Tensor weight, Tensor? bias=None)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_linear_meta, composite=_linear, autocast="lower",
      derivative={"input": lambda grad, weight: F.matmul(grad, weight),
                  "weight": _linear_weight_derivative,
                  "bias": lambda grad: grad},  # the engine sums the broadcast rows
      reference=lambda x, w, b=None: x @ w.T + (0 if b is None else b), samples=_linear_samples,
      method=False, tolerances=_HALF_TOLERANCES, onnx=_linear_onnx,
      doc="input @ weight^T + bias; weight is (out_features, in_features)")


# -- bilinear ---------------------------------------------------------------------------------------

def _bilinear_meta(x1, x2, weight, bias=None):
    require(len(shape(weight)) == 3, "bilinear", "expected a 3-D weight (out_features, in1_features, "
            "in2_features)", weight)
    out_features, in1, in2 = shape(weight)
    require(len(shape(x1)) >= 1 and shape(x1)[:-1] == shape(x2)[:-1], "bilinear",
            "input1 and input2 must have the same shape except for their last dim", x1, x2)
    require(shape(x1)[-1] == in1 and shape(x2)[-1] == in2, "bilinear",
            f"the inputs' last dims must be the weight's in1_features {in1} and in2_features {in2}",
            x1, x2, weight)
    if bias is not None:
        require(shape(bias) == (out_features,), "bilinear", f"bias must have {out_features} elements", bias)
    return shape(x1)[:-1] + (out_features,)


def _bilinear(x1, x2, weight, bias=None):
    """x1 times every weight slice in one matmul, then a batched dot product with x2."""
    out_features, in1, in2 = weight.shape
    lead = tuple(x1.shape[:-1])
    n = _prod(lead)
    slices = F.reshape(F.permute(weight, (1, 0, 2)), (in1, out_features * in2))
    left = F.reshape(F.matmul(F.reshape(x1, (n, in1)), slices), (n, out_features, in2))
    out = F.squeeze(F.matmul(left, F.reshape(x2, (n, in2, 1))), [-1])
    out = F.reshape(out, lead + (out_features,))
    return out if bias is None else F.add(out, bias)


def _bilinear_samples(make, dtype):
    w = _weights(make)
    yield Sample((make((4, 3)), make((4, 2)), w(5, 3, 2), make((5,))))
    yield Sample((make((2, 3, 4)), make((2, 3, 2), noncontiguous=True), w(3, 4, 2)), note="batch dims, no bias")
    yield Sample((make((3,)), make((2,)), w(2, 3, 2), make((2,))), note="1-D inputs")
    yield Sample((make((0, 3)), make((0, 2)), w(2, 3, 2)), note="empty batch")


def _bilinear_onnx(g, input1, input2, weight, bias):
    out = g.op("Einsum", input1, weight, input2, equation="...i,oij,...j->...o")
    return out if bias is None else g.op("Add", out, bias)


defop("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None)", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_bilinear_meta, composite=_bilinear,
      reference=lambda a, b, w, bias=None: np.einsum("...i,oij,...j->...o", a, w, b) + (0 if bias is None else bias),
      samples=_bilinear_samples, method=False, tolerances=_HALF_TOLERANCES, autocast={"cuda": "promote"},
      onnx=_bilinear_onnx,
      doc="out[..., o] = input1[..., i] weight[o, i, j] input2[..., j] + bias[o]")


# -- embedding --------------------------------------------------------------------------------------

def _embedding_normalize(op, values):
    """Checks the indices (this reads them, as PyTorch does) and wraps a negative padding_idx."""
    note_value_read()
    x, weight, padding_idx = values[:3]
    require(len(shape(weight)) == 2, "embedding", "expected a 2-D weight (num_embeddings, embedding_dim)", weight)
    if x._dtype.is_floating_point or x._dtype.kind == "bool":
        raise TypeError(f"embedding: expected integer indices, got {x._dtype.name}")
    num = shape(weight)[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding: padding_idx must be within num_embeddings ({num}), got {padding_idx}")
        values[2] = padding_idx % num
    if x.numel() and _checked_indices.recall(x, num) is MISSING:
        low, high = F.amin(x).item(), F.amax(x).item()
        if low < 0 or high >= num:
            raise IndexError(f"embedding: index {low if low < 0 else high} is out of range for "
                             f"{num} embeddings")
        _checked_indices.remember(x, num)


_checked_indices = CheckedValues()  # index tensors found in range, by table size: not read again while unchanged


def _embedding_weight_derivative(grad, input, weight, padding_idx, scale_grad_by_freq):
    """Each looked-up row's gradient summed into its row of weight; the padding row gets none."""
    index = F.reshape(input, (-1,))
    rows = F.reshape(grad, (index.shape[0], weight.shape[1]))
    if padding_idx is not None:
        rows = F.where(F.unsqueeze(F.ne(index, padding_idx), 1), rows, 0)
    if scale_grad_by_freq:  # divided by how often each index occurs in this batch
        counts = F.index_put_(F.zeros((weight.shape[0],), dtype=rows.dtype, device=rows.device), [index],
                              F.ones(tuple(index.shape), dtype=rows.dtype, device=rows.device), True)
        rows = F.div(rows, F.unsqueeze(F.index(counts, [index]), 1))
    return F.index_put_(F.zeros(tuple(weight.shape), dtype=rows.dtype, device=rows.device), [index], rows, True)


def _embedding_samples(make, dtype):
    def idx(shape_, num):
        return make(shape_, dtype=int64, low=0, high=num)
    yield Sample((idx((3, 5), 10), make((10, 4))))
    # the padding row's missing gradient and the frequency scaling are conventions, not derivatives
    yield Sample((idx((6,), 5), make((5, 3))), {"padding_idx": 2}, gradcheck=False)
    yield Sample((idx((2, 3), 4), make((4, 2), noncontiguous=True), -1, True),
                 note="negative padding_idx, scale_grad_by_freq", gradcheck=False)
    yield Sample((idx((), 3), make((3, 2))), note="0-d index")
    yield Sample((idx((0, 2), 3), make((3, 2))), note="no indices")


def _embedding_reference(x, weight, padding_idx=None, scale_grad_by_freq=False):
    return np.asarray(weight)[np.asarray(x)]


def _embedding_onnx(g, input, weight, padding_idx, scale_grad_by_freq):
    """Gather of the rows; padding_idx and scale_grad_by_freq change only gradients."""
    return g.op("Gather", weight, input, axis=0)


defop("embedding(Index input, Tensor weight, int? padding_idx=None, bool scale_grad_by_freq=False)", "nn",
      kind="composite", promotion=rules.same, meta=lambda x, weight, *rest: shape(x) + shape(weight)[1:],
      normalize=_embedding_normalize, composite=lambda x, weight, *rest: F.index(weight, [x]),
      derivative={"weight": _embedding_weight_derivative}, reference=_embedding_reference,
      samples=_embedding_samples, method=False, onnx=_embedding_onnx,
      doc="the rows of weight at the indices; the padding_idx row gets no gradient")


# -- shared by the normalizations ----------------------------------------------------------------------

def _like_input(rt, op, values):
    """The output keeps the input's dtype, whatever the dtypes of the weights or running statistics."""
    if not hasattr(values[0], "dtype"):
        raise TypeError(f"{op.name}(): argument 'input' (position 1) must be Tensor, not {type(values[0]).__name__}")
    dt = values[0].dtype
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

def _layer_norm_meta(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    normalized = tuple(normalized_shape)
    require(len(normalized) >= 1, "layer_norm", "normalized_shape must name at least one dimension", x)
    require(shape(x)[len(shape(x)) - len(normalized):] == normalized and len(shape(x)) >= len(normalized),
            "layer_norm", f"expected an input whose last dims are normalized_shape={list(normalized)}", x)
    _check_affine("layer_norm", "weight", weight, normalized, "(normalized_shape)")
    _check_affine("layer_norm", "bias", bias, normalized, "(normalized_shape)")
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


def _layer_norm_derivative(grad, input, normalized_shape, weight, eps):
    """One function for all inputs, so that the standardization is recomputed once, not per input."""
    dims = _trailing(input.ndim, normalized_shape)
    xhat, _, _, invstd = _standardize(widened(input), dims, eps)
    g = widened(grad)
    grad_input = grad_weight = None
    if _wants(input):
        grad_input = _standardize_backward(g if weight is None else F.mul(g, weight), xhat, invstd, dims)
    if _wants(weight):
        grad_weight = F.mul(g, xhat)  # the engine sums the leading dims down to normalized_shape
    return grad_input, grad_weight, grad


def _layer_norm_reference(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    count = len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else 1
    axes = tuple(range(x.ndim - count, x.ndim))
    x = np.asarray(x, np.float64)
    out = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return out * (1 if weight is None else weight) + (0 if bias is None else bias)


def _layer_norm_samples(make, dtype):
    w = _weights(make)
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
    return F.reshape(x, (x.shape[0], num_groups, x.shape[1] // num_groups * _prod(x.shape[2:])))


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
    w = _weights(make)
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

def _native_batch_norm_promotion(rt, op, values):
    dt = values[0].dtype
    return dt, (dt, opmath_dtype(dt), opmath_dtype(dt))


def _batch_norm_check(op_name: str, x, running_mean, running_var, weight, bias, training):
    require(len(shape(x)) >= 2, op_name, "expected an input of shape (N, C, *)", x)
    channels = shape(x)[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_affine(op_name, name, t, (channels,), f"to match the input's {channels} channels (dim 1)")
    if not training and (running_mean is None or running_var is None):
        raise ValueError(f"{op_name}: running_mean and running_var must be given in evaluation mode "
                         f"(training=False)")
    if training and _prod(shape(x)) // max(channels, 1) == 1:
        raise ValueError(f"{op_name}: expected more than 1 value per channel when training, got input of "
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
        count = _prod(x.shape) // x.shape[1]
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
            n = _prod(input.shape) // input.shape[1]
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
    w = _weights(make)

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
    w = _weights(make)

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


# -- dropout -------------------------------------------------------------------------------------------

def _dropout_normalize(op, values):
    if not 0.0 <= values[1] <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {values[1]}")


def _dropout(x, p=0.5, training=True, generator=None):
    """A Bernoulli(1 - p) mask scaled by 1 / (1 - p): recorded as a single mul, which saves only the mask."""
    if not training:
        return x
    if p == 1.0:
        return F.mul(x, 0.0)
    keep = F.bernoulli(x, 1.0 - p, generator=generator)
    return F.mul(x, F.mul(keep, 1.0 / (1.0 - p)))


def _dropout_samples(make, dtype):
    yield Sample((make((100, 50)), 0.3), note="many draws")
    yield Sample((make((3, 5)), 0.5, False), note="evaluation: the identity")
    yield Sample((make((3, 4)), 1.0), note="p=1 drops everything")
    yield Sample((make((2, 3), noncontiguous=True), 0.0), note="p=0 keeps everything")
    yield Sample((make((0, 3)),), note="empty")


def _dropout_onnx(g, input, p, training, generator):
    """The identity in evaluation; random masks are not exported (their draws could never match Ember's)."""
    if training and p > 0:
        g.fail("dropout in training mode draws random masks; call model.eval() before exporting")
    return g.op("Identity", input)


defop("dropout(Tensor input, float p=0.5, bool training=True, *, Generator? generator=None)", "random",
      kind="composite", promotion=rules.same, dtypes="float", meta=lambda x, *rest: shape(x),
      normalize=_dropout_normalize, composite=_dropout, samples=_dropout_samples, method=False, onnx=_dropout_onnx,
      doc="zeroes each element with probability p and scales the rest by 1 / (1 - p); the identity when not "
          "training")
