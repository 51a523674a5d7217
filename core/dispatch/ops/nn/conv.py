"""Convolution and transposed convolution.

Both are composites written in Ember ops, so they run on any backend; the CPU backend overrides them with
faster kernels. ``normalize`` turns PyTorch's "int or tuple" attributes into one value per spatial dim before
meta, composite or kernel see them; convolution padding reaches them as ``((before, after), ...)`` per spatial
dim, because ``padding='same'`` may pad one side more than the other. Convolution and transposed convolution
are each other's adjoints, which gives each its derivative.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...schema import rules
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from .samples import unit_weights
from .spatial import (at_least, expand_attr, flat_padding, int_tuple, onnx_batched, sliding_windows, with_batch,
                      without_batch)
from ...schema.errors import ArgumentError


# -- convolution --------------------------------------------------------------------------------------

def _conv_padding(op_name: str, padding, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """PyTorch's padding forms -> ((before, after), ...) per spatial dim; 'same' puts any odd pixel after."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding != "same":
            raise ArgumentError(f"{op_name}: invalid padding string {padding!r}; expected 'valid', 'same' or ints")
        if any(s != 1 for s in stride):
            raise ArgumentError(f"{op_name}: padding='same' is not supported for strided convolutions "
                                f"(stride={stride})")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, (list, tuple)) and len(padding) == n and all(isinstance(p, tuple) for p in padding):
        pairs = tuple(int_tuple(op_name, "padding", p, 2) for p in padding)
    else:
        pairs = tuple((p, p) for p in int_tuple(op_name, "padding", padding, n))
    at_least(op_name, "padding", tuple(v for pair in pairs for v in pair), 0)
    return pairs


def _conv_normalize(n: int):
    def normalize(op, args):
        weight = args["weight"]
        require(len(shape(weight)) == n + 2, op.name, f"expected a {n + 2}-D weight "
                f"(out_channels, in_channels / groups, *kernel)", weight)
        args["stride"] = at_least(op.name, "stride", int_tuple(op.name, "stride", args["stride"], n), 1)
        args["dilation"] = at_least(op.name, "dilation", int_tuple(op.name, "dilation", args["dilation"], n), 1)
        args["padding"] = _conv_padding(op.name, args["padding"], shape(weight)[2:], args["stride"], args["dilation"])
        if args["groups"] <= 0:
            raise ArgumentError(f"{op.name}: groups must be positive, got groups={args['groups']}")
    return normalize


def _check_channels(op_name: str, x, weight, bias, groups: int, in_channels: int, out_channels: int):
    """The channel rules shared by convolution and transposed convolution."""
    n = len(shape(weight)) - 2
    require(len(shape(x)) in (n + 1, n + 2), op_name,
            f"expected {n + 1}-D (unbatched) or {n + 2}-D (batched) input", x)
    require(shape(weight)[0] > 0 and shape(weight)[0] % groups == 0, op_name,
            f"weight's dim 0 must be a positive multiple of groups={groups}", weight)
    channels = shape(x)[-n - 1]
    require(channels == in_channels, op_name,
            f"weight of shape {shape(weight)} with groups={groups} expects input with {in_channels} channels, "
            f"got {channels}", x, weight)
    if bias is not None:
        require(shape(bias) == (out_channels,), op_name,
                f"bias must be 1-D with {out_channels} elements to match the output channels", bias)


def _conv_meta(op_name: str):
    def meta(x, weight, bias, stride, padding, dilation, groups):
        ws = shape(weight)
        _check_channels(op_name, x, weight, bias, groups, ws[1] * groups, ws[0])
        n = len(ws) - 2
        padded, kernel = [], []
        for size, (before, after), k, s, d in zip(shape(x)[-n:], padding, ws[2:], stride, dilation):
            padded.append(size + before + after)
            kernel.append(d * (k - 1) + 1)
        require(all(p >= k for p, k in zip(padded, kernel)), op_name,
                f"padded input size {tuple(padded)} is smaller than the (dilated) kernel size {tuple(kernel)}",
                x, weight)
        out = tuple((p - k) // s + 1 for p, k, s in zip(padded, kernel, stride))
        lead = shape(x)[:1] if len(shape(x)) == n + 2 else ()
        return lead + (ws[0],) + out
    return meta


def _convolution(x, weight, bias, stride, padding, dilation, groups):
    """im2col: every window becomes a column, and one batched matmul per group does the rest. One body for
    any number of spatial dims (conv2d and conv3d)."""
    n = weight.ndim - 2
    x, batched = with_batch(x, n)
    if any(p for pair in padding for p in pair):
        x = F.pad(x, flat_padding(padding))
    out_channels = weight.shape[0]
    windows = sliding_windows(x, tuple(weight.shape[2:]), stride, dilation)  # (N, C, *out, *kernel)
    batch, out = windows.shape[0], tuple(windows.shape[2:2 + n])
    depth = weight.numel() // out_channels  # in_channels / groups * prod(kernel), the length of one column
    kernel_first = (0, 1) + tuple(range(2 + n, 2 + 2 * n)) + tuple(range(2, 2 + n))
    cols = F.reshape(F.permute(windows, kernel_first), (batch, groups, depth, math.prod(out)))
    result = F.reshape(F.matmul(F.reshape(weight, (groups, out_channels // groups, depth)), cols),
                       (batch, out_channels) + out)
    if bias is not None:
        result = F.add(result, F.reshape(bias, (out_channels,) + (1,) * n))
    return without_batch(result, batched)


def _conv1d(x, weight, bias, stride, padding, dilation, groups):
    """A conv2d over a height of one."""
    out = F.conv2d(F.unsqueeze(x, -2), F.unsqueeze(weight, -2), bias, (1,) + stride, ((0, 0),) + padding,
                   (1,) + dilation, groups)
    return F.squeeze(out, -2)


def _wide(*arrays) -> np.dtype:
    """The references' accumulation dtype: complex128 where an operand is complex, else float64."""
    return np.dtype(np.complex128 if any(np.iscomplexobj(a) for a in arrays) else np.float64)


def _conv_reference(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct N-d convolution: one strided input slice per kernel tap, contracted over channels."""
    n = weight.ndim - 2
    batched = x.ndim == n + 2
    wide = _wide(x, weight, bias)
    x = np.asarray(x, wide) if batched else np.asarray(x, wide)[None]
    stride, dilation = expand_attr(stride, n), expand_attr(dilation, n)
    if padding == "valid":
        pads = [(0, 0)] * n
    elif padding == "same":
        pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(weight.shape[2:], dilation)]
    else:
        pads = [(v, v) for v in expand_attr(padding, n)]
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    kernel = weight.shape[2:]
    out_size = [(x.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out = np.zeros((x.shape[0], weight.shape[0], *out_size), wide)
    in_group, out_group = weight.shape[1], weight.shape[0] // groups
    for g in range(groups):
        xs = x[:, g * in_group:(g + 1) * in_group]
        ws = np.asarray(weight[g * out_group:(g + 1) * out_group], wide)
        for tap in np.ndindex(*kernel):
            index = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                          for t, d, o, s in zip(tap, dilation, out_size, stride))
            patch = xs[(slice(None), slice(None)) + index]
            out[:, g * out_group:(g + 1) * out_group] += np.einsum("nc...,oc->no...", patch, ws[(..., *tap)])
    if bias is not None:
        out += np.reshape(bias, (-1,) + (1,) * n)
    return out if batched else out[0]


def _conv2d_samples(make, dtype):
    w = lambda *s: make(s, low=-1, high=1)  # noqa: E731
    yield Sample((make((2, 3, 7, 6)), w(4, 3, 3, 3), make((4,))))
    yield Sample((make((2, 3, 7, 6)), w(4, 3, 3, 2)), {"stride": 2, "padding": 1})
    yield Sample((make((1, 2, 9, 8)), w(3, 2, 2, 3), None, (2, 1), (1, 2), (2, 3)), note="per-dim attributes")
    yield Sample((make((2, 4, 6, 6)), w(6, 2, 3, 3), make((6,))), {"groups": 2, "padding": 1})
    yield Sample((make((1, 4, 5, 5)), w(4, 1, 3, 3)), {"groups": 4}, note="depthwise")
    yield Sample((make((3, 6, 5), noncontiguous=True), w(2, 3, 1, 2)), note="unbatched, non-contiguous")
    yield Sample((make((1, 2, 5, 6)), w(3, 2, 2, 3)), {"padding": "same", "dilation": 2})
    yield Sample((make((1, 2, 5, 6)), w(3, 2, 3, 3)), {"padding": "valid"})
    yield Sample((make((1, 2, 5, 6)), w(3, 2, 2, 4), make((3,))), {"padding": "same"}, note="'same' pads one side more")
    yield Sample((make((2, 3, 9, 7)), w(4, 3, 3, 2)), {"stride": 3, "padding": (2, 1)},
                 note="the stride leaves trailing rows and columns unread")


def _conv1d_samples(make, dtype):
    w = lambda *s: make(s, low=-1, high=1)  # noqa: E731
    yield Sample((make((2, 3, 9)), w(4, 3, 3), make((4,))))
    yield Sample((make((2, 4, 9)), w(2, 2, 2)), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2})
    yield Sample((make((3, 8), noncontiguous=True), w(5, 3, 4)), {"padding": "same"}, note="unbatched")


_CONV_TOLERANCES = {"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}


# The derivatives of convolution. convNd is linear in its input and in its weight: the input's gradient is
# the transposed convolution of the output's gradient with the same weight, the weight's gradient pairs
# every input window (the forward's im2col columns) with the gradient of the output it made, and
# conv_transposeNd, the adjoint of convNd, swaps the two roles. Both directions call the other op, so
# either one's backward is differentiable in turn. Each helper serves 1, 2 and 3 spatial dims.

def _conv_op(spatial: int, transposed: bool = False):
    """The schema op conv{1,2,3}d or conv_transpose{1,2,3}d (looked up when called: F fills after import)."""
    return getattr(F, f"conv_transpose{spatial}d" if transposed else f"conv{spatial}d")


def _conv_input_grad(grad, weight, size: tuple, stride, padding, dilation, groups: int):
    """conv_transposeNd of grad: it crops the padding common to both sides, output_padding restores the
    trailing rows and columns no window reached (fewer than stride), and a one-sided excess of padding
    ('same' with an even kernel) is cropped afterwards."""
    n = len(size)
    common, trailing = [], []
    for length, (before, after), k, s, d, o in zip(size, padding, weight.shape[2:], stride, dilation,
                                                   grad.shape[-n:]):
        common.append(min(before, after))
        trailing.append(length + before + after - ((o - 1) * s + d * (k - 1) + 1))
    out = _conv_op(n, transposed=True)(grad, weight, None, stride, tuple(common), tuple(trailing), groups,
                                       dilation)
    for dim, length, (before, _), c in zip(range(-n, 0), size, padding, common):
        if out.shape[dim] != length:
            out = F.slice(out, dim, before - c, before - c + length)
    return out


def _conv_weight_grad(input, grad, kernel: tuple, stride, padding, dilation, groups: int):
    """The op ``convolution_backward_weight``, so that a backend can compute it with one kernel."""
    return F.convolution_backward_weight(grad, input, kernel, stride, padding, dilation, groups)


def _convolution_backward_weight(grad, input, kernel_size: tuple, stride, padding, dilation, groups: int):
    """grad times the input windows, summed over the batch and the output positions: one matmul per
    group. Only the windows that have an output in grad count (a transposed convolution's input may have
    fewer positions than its padded output has windows)."""
    n = len(kernel_size)
    x, _ = with_batch(input, n)
    g, _ = with_batch(grad, n)
    if any(p for pair in padding for p in pair):
        x = F.pad(x, flat_padding(padding))
    batch, channels, out = g.shape[0], g.shape[1], tuple(g.shape[2:])
    windows = sliding_windows(x, kernel_size, stride, dilation)
    for axis, length in enumerate(out, start=2):
        windows = F.slice(windows, axis, 0, length)
    depth = x.shape[1] // groups * math.prod(kernel_size)
    columns_order = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
    cols = F.reshape(F.permute(windows, columns_order), (groups, depth, batch * math.prod(out)))
    rows = F.reshape(F.permute(g, (1, 0) + tuple(range(2, 2 + n))), (groups, channels // groups, -1))
    result = F.matmul(rows, F.transpose(cols, 1, 2))
    return F.reshape(result, (channels, x.shape[1] // groups) + tuple(kernel_size))


def _backward_weight_normalize(op, args):
    kernel = args["kernel_size"]
    n = len(kernel) if isinstance(kernel, (list, tuple)) else len(shape(args["input"])) - 2
    args["kernel_size"] = at_least(op.name, "kernel_size", int_tuple(op.name, "kernel_size", kernel, n), 1)
    args["stride"] = at_least(op.name, "stride", int_tuple(op.name, "stride", args["stride"], n), 1)
    args["dilation"] = at_least(op.name, "dilation", int_tuple(op.name, "dilation", args["dilation"], n), 1)
    args["padding"] = _conv_padding(op.name, args["padding"], args["kernel_size"], args["stride"], args["dilation"])
    if args["groups"] <= 0:
        raise ArgumentError(f"{op.name}: groups must be positive, got groups={args['groups']}")


def _backward_weight_meta(grad, x, kernel_size, stride, padding, dilation, groups):
    name, n = "convolution_backward_weight", len(kernel_size)
    gs, xs = shape(grad), shape(x)
    require(len(xs) in (n + 1, n + 2) and len(gs) == len(xs), name, f"expected input and grad_output both "
            f"{n + 1}-D (unbatched) or {n + 2}-D (batched) for a {n}-D kernel_size {tuple(kernel_size)}", grad, x)
    require(len(xs) == n + 1 or gs[0] == xs[0], name, "input and grad_output must have the same batch size",
            grad, x)
    channels, out_channels = xs[-n - 1], gs[-n - 1]
    require(channels % groups == 0 and out_channels % groups == 0 and out_channels > 0, name,
            f"input channels ({channels}) and grad_output channels ({out_channels}) must be multiples of "
            f"groups={groups}", grad, x)
    reach = tuple((o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(gs[-n:], stride, dilation, kernel_size))
    padded = tuple(size + before + after for size, (before, after) in zip(xs[-n:], padding))
    require(all(r <= p for r, p in zip(reach, padded)), name, f"grad_output's {tuple(gs[-n:])} windows reach "
            f"{reach}, past the padded input size {padded}", grad, x)
    return (out_channels, channels // groups) + tuple(kernel_size)


def _backward_weight_reference(grad, x, kernel_size, stride=1, padding=0, dilation=1, groups=1):
    """Per kernel tap: the gradient times the input elements that tap saw, summed over batch and positions."""
    n = len(kernel_size)
    stride, dilation = expand_attr(stride, n), expand_attr(dilation, n)
    pads = [p if isinstance(p, tuple) else (p, p) for p in expand_attr(padding, n)]
    g, x = np.asarray(grad, np.float64), np.asarray(x, np.float64)
    if x.ndim == n + 1:
        g, x = g[None], x[None]
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    out, in_group, out_group = g.shape[2:], x.shape[1] // groups, g.shape[1] // groups
    result = np.zeros((g.shape[1], in_group) + tuple(kernel_size))
    for k in range(groups):
        gk, xk = g[:, k * out_group:(k + 1) * out_group], x[:, k * in_group:(k + 1) * in_group]
        for tap in np.ndindex(*kernel_size):
            index = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, out, stride))
            patch = xk[(slice(None), slice(None)) + index]
            summed = [0] + list(range(2, 2 + n))  # batch and positions
            result[(slice(k * out_group, (k + 1) * out_group), slice(None)) + tap] = np.tensordot(
                gk, patch, (summed, summed))
    return result


def _backward_weight_samples(make, dtype):
    yield Sample((make((2, 4, 5, 4)), make((2, 3, 5, 4)), (3, 3), 1, 1))
    yield Sample((make((1, 4, 3, 2)), make((1, 4, 7, 6)), (2, 3), (2, 1), ((1, 0), (0, 1)), (2, 2), 2),
                 note="strided, dilated, one-sided padding, groups")
    yield Sample((make((3, 2), noncontiguous=True), make((6, 5)), (2,), 2, 0, 1, 3),
                 note="unbatched 1-D, trailing input no window reaches")


defop("convolution_backward_weight(Tensor grad_output, Tensor input, int[] kernel_size, int[] stride=1, "
      "Any padding=0, int[] dilation=1, int groups=1)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_backward_weight_meta, normalize=_backward_weight_normalize,
      composite=_convolution_backward_weight, reference=_backward_weight_reference,
      samples=_backward_weight_samples, method=False, tolerances=_CONV_TOLERANCES,
      doc="the gradient of a convolution (1 to 3 spatial dims, from kernel_size) with respect to its weight, "
          "(out_channels, in_channels / groups, *kernel_size), from grad_output and the input")


def _bias_grad(grad, spatial: int):
    """The sum over every dim but the channel one (the one before the spatial dims)."""
    return F.sum(grad, tuple(d for d in range(grad.ndim) if d != grad.ndim - spatial - 1))


def _conv_input_derivative(grad, input, weight, stride, padding, dilation, groups):
    n = weight.ndim - 2
    return _conv_input_grad(grad, weight, tuple(input.shape[-n:]), stride, padding, dilation, groups)


def _conv_weight_derivative(grad, input, weight, stride, padding, dilation, groups):
    return _conv_weight_grad(input, grad, tuple(weight.shape[2:]), stride, padding, dilation, groups)


def _conv_derivative(input_derivative, weight_derivative, spatial: int = 2) -> dict:
    """Per input, so that a first layer (whose input needs no gradient) skips the transposed convolution."""
    return {"input": input_derivative, "weight": weight_derivative, "bias": lambda grad: _bias_grad(grad, spatial)}


def _conv_onnx(g, input, weight, bias, stride, padding, dilation, groups):
    kernel = [int(k) for k in g.static(g.shape_of(weight)[2:], "kernel size")]
    pads = [before for before, _ in padding] + [after for _, after in padding]
    return onnx_batched(g, input, len(kernel), lambda x: g.op(
        "Conv", x, weight, bias, kernel_shape=kernel, strides=list(stride), pads=pads, dilations=list(dilation),
        group=int(groups)))


def _conv3d_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((2, 2, 3, 4, 3)), w(3, 2, 2, 2, 2), make((3,))))
    yield Sample((make((1, 4, 4, 5, 4)), w(2, 2, 2, 3, 2)), {"stride": (2, 1, 2), "padding": 1, "dilation": (1, 2, 1),
                                                             "groups": 2})
    yield Sample((make((2, 3, 3, 4), noncontiguous=True), w(2, 2, 2, 1, 3)), {"padding": "same"}, note="unbatched")


def _parts(x):
    """``(real, imag)`` of a complex tensor, ``(x, None)`` of a real one."""
    return (F.real(x), F.imag(x)) if x.dtype.is_complex else (x, None)


def gauss_product(bilinear, x, w):
    """``bilinear(x, w)`` (real-linear in each argument, as convolution is) for complex ``x`` or ``w``, computed with
    real calls, as PyTorch computes complex convolution: two where one is real, three where both are complex (Gauss:
    ac - bd and (a + b)(c + d) - ac - bd). Backends then need no complex kernel, and autograd differentiates the real
    calls."""
    a, b = _parts(x)
    c, d = _parts(w)
    if b is None:
        return F.complex(bilinear(a, c), bilinear(a, d))
    if d is None:
        return F.complex(bilinear(a, c), bilinear(b, c))
    ac, bd = bilinear(a, c), bilinear(b, d)
    cross = bilinear(F.add(a, b), F.add(c, d))
    return F.complex(F.sub(ac, bd), F.sub(F.sub(cross, ac), bd))


def _complex_conv(name: str):
    """conv{n}d or conv_transpose{n}d of complex operands as real convolutions (``gauss_product``), plus the bias."""
    def decomposition(x, weight, bias, *attributes):
        conv = getattr(F, name)
        out = gauss_product(lambda a, w: conv(a, w, None, *attributes), x, weight)
        if bias is None:
            return out
        return F.add(out, F.reshape(bias, (-1,) + (1,) * (weight.ndim - 2)))  # channels lead, batched or not
    return decomposition


def _declare_conv(name: str, n: int, dims: str, composite, samples) -> None:
    """conv1d, conv2d and conv3d differ only in their spatial rank, composite and samples."""
    defop(f"{name}(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, Any padding=0, "
          "int[] dilation=1, int groups=1)", "nn", kind="composite",
          derivative=_conv_derivative(_conv_input_derivative, _conv_weight_derivative, spatial=n),
          complex_decomposition=_complex_conv(name), promotion=rules.same, dtypes="float+complex",
          meta=_conv_meta(name), normalize=_conv_normalize(n),
          composite=composite, reference=_conv_reference, samples=samples, method=False, autocast="lower",
          onnx=_conv_onnx, tolerances=_CONV_TOLERANCES, jvp="multilinear",
          doc=f"{n}-D cross-correlation; padding is ints, 'valid' or 'same'; input (N, C, {dims}) or unbatched "
              f"(C, {dims})")


_declare_conv("conv2d", 2, "H, W", _convolution, _conv2d_samples)
_declare_conv("conv1d", 1, "L", _conv1d, _conv1d_samples)
_declare_conv("conv3d", 3, "D, H, W", _convolution, _conv3d_samples)


# -- transposed convolution -----------------------------------------------------------------------------

def _conv_transpose_normalize(n: int):
    def normalize(op, args):
        for name, low in (("stride", 1), ("padding", 0), ("output_padding", 0), ("dilation", 1)):
            args[name] = at_least(op.name, name, int_tuple(op.name, name, args[name], n), low)
        if args["groups"] <= 0:
            raise ArgumentError(f"{op.name}: groups must be positive, got groups={args['groups']}")
        for extra, s, d in zip(args["output_padding"], args["stride"], args["dilation"]):
            if extra >= max(s, d):
                raise ArgumentError(f"{op.name}: output_padding must be smaller than either stride or dilation, "
                                    f"got output_padding={args['output_padding']}, stride={args['stride']}, "
                                    f"dilation={args['dilation']}")
    return normalize


def _transposed_size(size, k, s, p, extra, d) -> int:
    return (size - 1) * s - 2 * p + d * (k - 1) + extra + 1


def _conv_transpose_meta(op_name: str, n: int):
    def meta(x, weight, bias, stride, padding, output_padding, groups, dilation):
        require(len(shape(weight)) == n + 2, op_name,
                f"expected a {n + 2}-D weight (in_channels, out_channels / groups, *kernel)", weight)
        ws = shape(weight)
        _check_channels(op_name, x, weight, bias, groups, ws[0], ws[1] * groups)
        out = tuple(_transposed_size(*args) for args in zip(shape(x)[-n:], ws[2:], stride, padding,
                                                             output_padding, dilation))
        require(all(o > 0 for o in out), op_name,
                f"calculated output size {out} is too small (padding={padding}, stride={stride})", x, weight)
        lead = shape(x)[:1] if len(shape(x)) == n + 2 else ()
        return lead + (ws[1] * groups,) + out
    return meta


def _spread(x, dim: int, step: int):
    """Put step - 1 zeros between neighbours along dim: where a strided convolution's inputs land."""
    if step == 1 or x.shape[dim] == 0:
        return x
    size = x.shape[dim]
    gap_shape = x.shape[:dim + 1] + (step - 1,) + x.shape[dim + 1:]
    x = F.cat([F.unsqueeze(x, dim + 1), F.zeros(gap_shape, dtype=x.dtype, device=x.device)], dim + 1)
    return F.slice(F.flatten(x, dim, dim + 1), dim, 0, (size - 1) * step + 1)


def _place(x, dim: int, offset: int, length: int):
    """x moved to start at ``offset`` on a zero line of ``length`` along dim; None when nothing lands on it."""
    size = x.shape[dim]
    start, end = max(0, -offset), min(size, length - offset)
    if end <= start:
        return None
    pad = [0, 0] * (x.ndim - 1 - dim) + [offset + start, length - offset - end]
    return F.pad(F.slice(x, dim, start, end), pad)


def _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """matmul to per-tap columns, then col2im: each tap's plane is spread by stride and added at its offset.
    One body for any number of spatial dims."""
    n = weight.ndim - 2
    x, batched = with_batch(x, n)
    batch, in_channels, size_in = x.shape[0], x.shape[1], tuple(x.shape[2:])
    out_group, kernel = weight.shape[1], tuple(weight.shape[2:])
    out_channels = out_group * groups
    taps = F.transpose(F.reshape(weight, (groups, in_channels // groups, out_group * math.prod(kernel))), 1, 2)
    cols = F.matmul(taps, F.reshape(x, (batch, groups, in_channels // groups, math.prod(size_in))))
    cols = F.reshape(cols, (batch, out_channels) + kernel + size_in)
    for i, s in enumerate(stride):
        cols = _spread(cols, 2 + n + i, s)
    size = tuple(_transposed_size(*a) for a in zip(size_in, kernel, stride, padding, output_padding, dilation))
    out = None
    for tap in itertools.product(*(range(k) for k in kernel)):
        plane = cols
        for t in tap:  # each select removes a kernel dim, so the next one is at dim 2 again
            plane = F.select(plane, 2, t)
        for i, t in enumerate(tap):
            plane = _place(plane, 2 + i, t * dilation[i] - padding[i], size[i])
            if plane is None:
                break
        if plane is not None:
            out = plane if out is None else F.add(out, plane)
    if out is None:
        out = F.zeros((batch, out_channels) + size, dtype=x.dtype, device=x.device)
    if bias is not None:
        out = F.add(out, F.reshape(bias, (out_channels,) + (1,) * n))
    return without_batch(out, batched)


def _conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """A conv_transpose2d over a height of one."""
    out = F.conv_transpose2d(F.unsqueeze(x, -2), F.unsqueeze(weight, -2), bias, (1,) + stride, (0,) + padding,
                             (0,) + output_padding, groups, (1,) + dilation)
    return F.squeeze(out, -2)


def _conv_transpose_reference(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The definition: every input element scatters weight * value onto the output, one kernel tap at a time."""
    n = weight.ndim - 2
    stride, padding, output_padding, dilation = (expand_attr(v, n) for v in (stride, padding, output_padding,
                                                                             dilation))
    batched = x.ndim == n + 2
    wide = _wide(x, weight, bias)
    x = np.asarray(x, wide) if batched else np.asarray(x, wide)[None]
    weight = np.asarray(weight, wide)
    size_in, kernel = x.shape[2:], weight.shape[2:]
    in_group, out_group = x.shape[1] // groups, weight.shape[1]
    size = [_transposed_size(*a) for a in zip(size_in, kernel, stride, padding, output_padding, dilation)]
    spans = [(i - 1) * s + 1 for i, s in zip(size_in, stride)]
    extent = [max(d * (k - 1) + span, p + o) for d, k, span, p, o in zip(dilation, kernel, spans, padding, size)]
    canvas = np.zeros((x.shape[0], out_group * groups, *extent), wide)
    for g in range(groups):
        xs, ws = x[:, g * in_group:(g + 1) * in_group], weight[g * in_group:(g + 1) * in_group]
        for tap in np.ndindex(*kernel):
            index = tuple(slice(t * d, t * d + span, s) for t, d, span, s in zip(tap, dilation, spans, stride))
            canvas[(slice(None), slice(g * out_group, (g + 1) * out_group)) + index] += np.einsum(
                "nc...,co->no...", xs, ws[(..., *tap)])
    out = canvas[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, size))]
    if bias is not None:
        out = out + np.reshape(bias, (-1,) + (1,) * n)
    return out if batched else out[0]


def _conv_transpose_samples(make, dtype):
    w = lambda *s: make(s, low=-1, high=1)  # noqa: E731
    yield Sample((make((2, 3, 4, 5)), w(3, 2, 3, 3), make((2,))))
    yield Sample((make((2, 3, 4, 4)), w(3, 2, 3, 2)), {"stride": 2, "padding": 1, "output_padding": 1})
    yield Sample((make((1, 4, 3, 5)), w(4, 3, 2, 3), make((6,)), (2, 3), (1, 0), (1, 2), 2, (2, 1)),
                 note="per-dim attributes and groups")
    yield Sample((make((2, 4, 3), noncontiguous=True), w(2, 3, 3, 3)), {"dilation": 2}, note="unbatched")
    yield Sample((make((1, 1, 1, 1)), w(1, 1, 5, 5)), {"padding": 2}, note="taps cropped away entirely")
    yield Sample((make((1, 2, 4, 3)), w(2, 3, 2, 3)), {"output_padding": 1, "dilation": 2},
                 note="output_padding not smaller than the stride")


def _conv_transpose1d_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((2, 3, 5)), w(3, 2, 3), make((2,))))
    yield Sample((make((1, 4, 4)), w(4, 3, 2), make((6,))), {"stride": 2, "padding": 1, "output_padding": 1,
                                                            "groups": 2})
    yield Sample((make((2, 4), noncontiguous=True), w(2, 3, 3)), {"dilation": 2}, note="unbatched")


def _conv_transpose3d_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((2, 2, 2, 3, 2)), w(2, 3, 2, 2, 2), make((3,))))
    yield Sample((make((1, 4, 2, 2, 3)), w(4, 1, 2, 3, 2)), {"stride": (2, 1, 2), "padding": (1, 0, 1),
                                                             "output_padding": (1, 0, 0), "groups": 2})
    yield Sample((make((2, 2, 2, 2), noncontiguous=True), w(2, 2, 3, 2, 2)), {"dilation": (1, 2, 1)},
                 note="unbatched")


def _conv_transpose_input_derivative(grad, input, weight, stride, padding, dilation, groups):
    """convNd of grad with the same weight; output_padding can leave it a window longer than the input
    (when it is not smaller than stride), which gets cropped."""
    n = weight.ndim - 2
    pairs = tuple((p, p) for p in padding)
    out = _conv_op(n)(grad, weight, None, stride, pairs, dilation, groups)
    for dim, length in zip(range(-n, 0), input.shape[-n:]):
        if out.shape[dim] != length:
            out = F.slice(out, dim, 0, length)
    return out


def _conv_transpose_weight_derivative(grad, input, weight, stride, padding, dilation, groups):
    """convNd's weight gradient with the roles swapped: grad's windows against the input."""
    pairs = tuple((p, p) for p in padding)
    return _conv_weight_grad(grad, input, tuple(weight.shape[2:]), stride, pairs, dilation, groups)


def _conv_transpose_onnx(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """output_padding becomes a smaller padding at the end (onnxruntime refuses output_padding >= stride, which
    PyTorch allows below the dilation); rows past every tap are zeros plus the bias, added after."""
    kernel = [int(k) for k in g.static(g.shape_of(weight)[2:], "kernel size")]
    n = len(kernel)
    ends = [max(p - e, 0) for p, e in zip(padding, output_padding)]
    extra = [max(e - p, 0) for p, e in zip(padding, output_padding)]

    def build(x):
        out = g.op("ConvTranspose", x, weight, None if any(extra) else bias, kernel_shape=kernel,
                   strides=list(stride), pads=list(padding) + ends, dilations=list(dilation), group=int(groups))
        if not any(extra):
            return out
        out = g.op("Pad", out, g.ints([0] * (n + 4) + extra), g.const(0, g.compute))
        return out if bias is None else g.op("Add", out, g.op("Reshape", bias, g.ints([-1] + [1] * n)))
    return onnx_batched(g, input, n, build)


def _declare_conv_transpose(name: str, n: int, dims: str, composite, samples) -> None:
    """conv_transpose1d/2d/3d differ only in their spatial rank, composite and samples."""
    defop(f"{name}(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, int[] padding=0, "
          "int[] output_padding=0, int groups=1, int[] dilation=1)", "nn", kind="composite", promotion=rules.same,
          derivative=_conv_derivative(_conv_transpose_input_derivative, _conv_transpose_weight_derivative,
                                      spatial=n),
          dtypes="float+complex", complex_decomposition=_complex_conv(name),
          meta=_conv_transpose_meta(name, n), normalize=_conv_transpose_normalize(n),
          composite=composite, reference=_conv_transpose_reference, samples=samples,
          autocast="lower", onnx=_conv_transpose_onnx, method=False, tolerances=_CONV_TOLERANCES, jvp="multilinear",
          doc=f"the gradient of conv{n}d with respect to its input ('deconvolution'); weight is "
              f"(in_channels, out_channels / groups, {dims})")


_declare_conv_transpose("conv_transpose2d", 2, "kH, kW", _conv_transpose, _conv_transpose_samples)
_declare_conv_transpose("conv_transpose1d", 1, "kL", _conv_transpose1d, _conv_transpose1d_samples)
_declare_conv_transpose("conv_transpose3d", 3, "kD, kH, kW", _conv_transpose, _conv_transpose3d_samples)


# -- convolution: PyTorch's one entry point for all of the above ----------------------------------------------

def _convolution_normalize(op, args):
    n = len(shape(args["weight"])) - 2
    require(n in (1, 2, 3), "convolution", "expected a 3-D, 4-D or 5-D weight", args["weight"])
    (_conv_transpose_normalize(n) if args["transposed"] else _conv_normalize(n))(op, args)


def _convolution_meta(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = len(shape(weight)) - 2
    if transposed:
        return _conv_transpose_meta("convolution", n)(x, weight, bias, stride, padding, output_padding, groups,
                                                      dilation)
    return _conv_meta("convolution")(x, weight, bias, stride, padding, dilation, groups)


def _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """conv{1,2,3}d or conv_transpose{1,2,3}d by the weight's rank, so each keeps its kernels and derivative."""
    n = weight.ndim - 2
    if transposed:
        return _conv_op(n, transposed=True)(x, weight, bias, stride, padding, output_padding, groups, dilation)
    return _conv_op(n)(x, weight, bias, stride, padding, dilation, groups)


def _convolution_reference(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        return _conv_transpose_reference(x, weight, bias, stride, padding, output_padding, groups, dilation)
    return _conv_reference(x, weight, bias, stride, padding, dilation, groups)


def _convolution_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((2, 4, 7)), w(2, 2, 3), make((2,)), (2,), (1,), (1,), False, (0,), 2), note="1-D")
    yield Sample((make((1, 3, 3, 4)), w(3, 2, 2, 3), None, (2, 1), (1, 0), (1, 2), True, (1, 0), 1),
                 note="2-D transposed")
    yield Sample((make((1, 2, 3, 4, 3)), w(2, 2, 2, 2, 2), make((2,)), 1, 0, 1, False, 0, 1), note="3-D")


defop("convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, Any padding, int[] dilation, "
      "bool transposed, int[] output_padding, int groups)", "nn", kind="composite", promotion=rules.same,
      dtypes="float+complex", complex_decomposition=_convolution, meta=_convolution_meta,
      normalize=_convolution_normalize, composite=_convolution,
      reference=_convolution_reference, samples=_convolution_samples, method=False, autocast="lower",
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="any convolution or transposed convolution (1 to 3 spatial dims, from the weight's rank)")
