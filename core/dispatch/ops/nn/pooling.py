"""Max, average and adaptive average pooling, and the pooling gradients as ops of their own.

The gradients (``max_pool2d_backward``, ``avg_pool2d_backward``) are ops so that a backend can override them
with one kernel, as it does the forwards; their core definitions are Ember ops, which autograd decomposes when
the gradient itself is differentiated.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..indexing.value_checks import vouched
from ..namespace import F
from .spatial import (at_least, expand_attr, flat_padding, int_tuple, onnx_batched, sliding_windows, with_batch,
                      without_batch)
from ._shared import _adaptive_normalize, _lowest, _pool_output_size
from ...schema.errors import ArgumentError


# -- pooling ------------------------------------------------------------------------------------------------

def pool_normalize(n: int):
    """The normalize hook of an n-D pooling: kernel_size, stride (default: kernel_size), padding and dilation
    -> n values each; PyTorch's limits; divisor_override (average pooling) must not be zero.

    The pooling-gradient ops name their attributes as the forwards do, so they normalize with this too."""
    def normalize(op, args):
        kernel = at_least(op.name, "kernel_size", int_tuple(op.name, "kernel_size", args["kernel_size"], n), 1)
        stride = args["stride"] or kernel
        args["kernel_size"] = kernel
        args["stride"] = at_least(op.name, "stride", int_tuple(op.name, "stride", stride, n), 1)
        args["padding"] = at_least(op.name, "padding", int_tuple(op.name, "padding", args["padding"], n), 0)
        if "dilation" in args:
            args["dilation"] = at_least(op.name, "dilation", int_tuple(op.name, "dilation", args["dilation"], n), 1)
        if any(p > k // 2 for p, k in zip(args["padding"], kernel)):
            raise ArgumentError(f"{op.name}: padding should be at most half of the kernel size, got "
                                f"padding={args['padding']} and kernel_size={kernel}")
        if args.get("divisor_override") == 0:
            raise ArgumentError(f"{op.name}: divisor_override must not be zero")
    return normalize


_pool_normalize = pool_normalize(2)


def _pool_meta(op_name: str, x, kernel, stride, padding, dilation, ceil_mode):
    in_shape = shape(x)
    require(len(in_shape) in (3, 4) and all(in_shape[-3:]), op_name,
            "expected a 3-D (C, H, W) or 4-D (N, C, H, W) input with non-zero channels and spatial sizes", x)
    out = tuple(_pool_output_size(*args, ceil_mode) for args in zip(in_shape[-2:], kernel, stride, padding, dilation))
    require(all(o > 0 for o in out), op_name,
            f"calculated output size {out} is too small for kernel_size={kernel}, padding={padding}", x)
    return in_shape[:-2] + out


def _pool_extent(size: tuple, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    """(output size, extra padding on the right that ceil mode's last window reaches) per spatial dim."""
    out = [_pool_output_size(*a, ceil_mode) for a in zip(size, kernel, stride, padding, dilation)]
    right = [max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
             for o, s, d, k, n, p in zip(out, stride, dilation, kernel, size, padding)]
    return out, right


def _pool_windows(x, kernel, stride, padding, dilation, ceil_mode, fill):
    """Padded with ``fill`` (extra on the right in ceil mode) -> (N, C, OH, OW, kh, kw) window view."""
    out, right = _pool_extent(tuple(x.shape[-2:]), kernel, stride, padding, dilation, ceil_mode)
    if any(padding) or any(right):
        x = F.pad(x, (padding[1], right[1], padding[0], right[0]), value=fill)
    windows = sliding_windows(x, kernel, stride, dilation)
    return F.slice(F.slice(windows, 2, 0, out[0]), 3, 0, out[1])


def _max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    x, batched = with_batch(x, 2)
    windows = _pool_windows(x, kernel_size, stride, padding, dilation, ceil_mode, _lowest(x.dtype))
    return without_batch(F.amax(windows, (-2, -1)), batched)


def _pool_counts(size: int, k: int, s: int, p: int, out: int, include_pad: bool, device):
    """How many elements each window averages: clipped to the padded input, or to the input itself."""
    start = F.sub(F.mul(F.arange(out, device=device), s), p)
    end = F.minimum(F.add(start, k), size + p)
    if not include_pad:
        start, end = F.maximum(start, 0), F.minimum(end, size)
    return F.sub(end, start)


def _avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, batched = with_batch(x, 2)
    windows = _pool_windows(x, kernel_size, stride, padding, (1, 1), ceil_mode, 0.0)
    total = F.sum(windows, (-2, -1))
    if divisor_override is not None:
        return without_batch(F.div(total, divisor_override), batched)
    rows, cols = (_pool_counts(*a, count_include_pad, x.device)
                  for a in zip(x.shape[-2:], kernel_size, stride, padding, total.shape[-2:]))
    return without_batch(F.div(total, F.mul(F.unsqueeze(rows, 1), cols)), batched)


def _window_matrix(size: int, k: int, s: int, p: int, out: int, count, dtype, device):
    """(out, size): row o holds 1 / count[o] (or 1 where count is None) on the input elements of window o."""
    start = F.unsqueeze(F.sub(F.mul(F.arange(out, device=device), s), p), 1)
    position = F.arange(size, device=device)
    member = F.to_dtype(F.logical_and(F.ge(position, start), F.lt(position, F.add(start, k))), dtype)
    return member if count is None else F.div(member, F.unsqueeze(count, 1))


def _avg_pool2d_backward(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
    """Average pooling is separable: each plane's output is A_h x A_w^T, where row o of A_h holds
    1 / count on the input rows of window o (the divisor factors into a row and a column count, see
    _pool_counts). So the gradient is A_h^T grad A_w: two matmuls, and padding needs no special case."""
    grad = grad_output if divisor_override is None else F.div(grad_output, divisor_override)
    along = []  # A_h, A_w
    for dim in (-2, -1):
        geometry = (input.shape[dim], kernel_size[dim], stride[dim], padding[dim], grad.shape[dim])
        count = None if divisor_override is not None else _pool_counts(*geometry, count_include_pad, grad.device)
        along.append(_window_matrix(*geometry, count, grad.dtype, grad.device))
    return F.matmul(F.matmul(F.transpose(along[0], 0, 1), grad), along[1])


def _pool_reference_windows(x, kernel_size, stride, padding, dilation, ceil_mode):
    """Yield (oh, ow, valid row indices, valid column indices, (hstart, hend, wstart, wend) clipped to the
    padded input) for each output pixel, straight from PyTorch's loops."""
    kernel = expand_attr(kernel_size, 2)
    stride = expand_attr(stride, 2) if stride not in (None, [], ()) else kernel
    padding, dilation = expand_attr(padding, 2), expand_attr(dilation, 2)
    h, w = x.shape[-2:]
    oh, ow = (_pool_output_size(*a, ceil_mode) for a in zip((h, w), kernel, stride, padding, dilation))
    for i, j in np.ndindex(oh, ow):
        hs, ws = i * stride[0] - padding[0], j * stride[1] - padding[1]
        rows = [r for r in range(hs, hs + dilation[0] * (kernel[0] - 1) + 1, dilation[0]) if 0 <= r < h]
        cols = [c for c in range(ws, ws + dilation[1] * (kernel[1] - 1) + 1, dilation[1]) if 0 <= c < w]
        box = (hs, min(hs + kernel[0], h + padding[0]), ws, min(ws + kernel[1], w + padding[1]))
        yield i, j, rows, cols, box, (oh, ow)


def _max_pool_reference(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    out = None
    for i, j, rows, cols, _, size in _pool_reference_windows(x, kernel_size, stride, padding, dilation, ceil_mode):
        if out is None:
            out = np.zeros(x.shape[:-2] + size, x.dtype)
        out[..., i, j] = np.max(x[..., rows, :][..., cols], axis=(-2, -1))
    return out


def _avg_pool_reference(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                        divisor_override=None):
    out = None
    for i, j, rows, cols, box, size in _pool_reference_windows(x, kernel_size, stride, padding, 1, ceil_mode):
        if out is None:
            out = np.zeros(x.shape[:-2] + size)
        divisor = _reference_divisor(box, rows, cols, count_include_pad, divisor_override)
        out[..., i, j] = np.sum(np.asarray(x, np.float64)[..., rows, :][..., cols], axis=(-2, -1)) / divisor
    return out


def _reference_divisor(box, rows, cols, count_include_pad, divisor_override):
    """What the reference divides a window's sum by: the override, the padded box, or the real elements."""
    if divisor_override:
        return divisor_override
    if count_include_pad:
        return (box[1] - box[0]) * (box[3] - box[2])
    return len(rows) * len(cols)


def _avg_pool_backward_reference(grad_output, x, kernel_size, stride=None, padding=0, ceil_mode=False,
                                 count_include_pad=True, divisor_override=None):
    """Each output's gradient spread evenly (by the forward's divisor) over its window's input elements."""
    out = np.zeros(x.shape)
    for i, j, rows, cols, box, _ in _pool_reference_windows(x, kernel_size, stride, padding, 1, ceil_mode):
        divisor = _reference_divisor(box, rows, cols, count_include_pad, divisor_override)
        spread = np.asarray(grad_output, np.float64)[..., i, j, None, None] / divisor
        out[(Ellipsis,) + np.ix_(rows, cols)] += spread
    return out


def _max_pool_samples(make, dtype):
    yield Sample((make((2, 3, 6, 6)), 2))
    yield Sample((make((2, 3, 7, 8)), 3), {"stride": 2, "padding": 1})
    yield Sample((make((1, 2, 9, 8)), (3, 2), (2, 1), (1, 0), (2, 3)), note="per-dim attributes and dilation")
    yield Sample((make((2, 5, 5), noncontiguous=True), 2), {"ceil_mode": True}, note="unbatched")
    yield Sample((make((1, 1, 6, 7)), 3, 2, 1), {"ceil_mode": True})
    yield Sample((make((1, 1, 5, 5)), 2, 3), {"ceil_mode": True}, note="last ceil window dropped")


def _avg_pool_samples(make, dtype):
    yield Sample((make((2, 3, 6, 6)), 2))
    yield Sample((make((2, 3, 7, 8)), 3), {"stride": 2, "padding": 1})
    yield Sample((make((2, 3, 7, 8)), 3), {"stride": 2, "padding": 1, "count_include_pad": False})
    yield Sample((make((1, 2, 9, 8)), (3, 2), (2, 1), (1, 0)), note="per-dim attributes")
    yield Sample((make((2, 5, 5), noncontiguous=True), 2), {"ceil_mode": True}, note="unbatched")
    for include in (True, False):
        yield Sample((make((1, 1, 6, 7)), 3, 2, 1, True, include), note="ceil mode clips the divisor")
    yield Sample((make((1, 2, 6, 6)), 3), {"padding": 1, "divisor_override": 5})


def _max_pool_meta(x, k, s, p, d, ceil):
    return _pool_meta("max_pool2d", x, k, s, p, d, ceil)


#: The dtypes onnxruntime's MaxPool takes; others take the maximum of strided Slices, which is exact too.
_ONNX_MAX_POOL_DTYPES = ("float32", "float64", "float16", "int8", "uint8")


def _max_pool2d_onnx(g, input, kernel_size, stride, padding, dilation, ceil_mode):
    if g.compute.name in _ONNX_MAX_POOL_DTYPES:
        return onnx_batched(g, input, 2, lambda x: g.op(
            "MaxPool", x, kernel_shape=list(kernel_size), strides=list(stride), pads=list(padding) * 2,
            dilations=list(dilation), ceil_mode=int(ceil_mode)))
    size = g.static(g.shape_of(input)[-2:], "input size")
    out, right = _pool_extent(size, kernel_size, stride, padding, dilation, ceil_mode)
    rank = len(g.shape_of(input))
    pads = [0] * (rank - 2) + list(padding) + [0] * (rank - 2) + [p + r for p, r in zip(padding, right)]
    x = g.op("Pad", input, g.ints(pads), g.const(_lowest(g.compute), g.compute)) if any(pads) else input
    taps = []
    for i in range(kernel_size[0]):
        for j in range(kernel_size[1]):
            starts = [i * dilation[0], j * dilation[1]]
            ends = [a + (o - 1) * s + 1 for a, o, s in zip(starts, out, stride)]
            taps.append(g.op("Slice", x, g.ints(starts), g.ints(ends), g.ints([rank - 2, rank - 1]),
                             g.ints(list(stride))))
    return g.op("Max", *taps) if len(taps) > 1 else g.op("Identity", taps[0])


defop("max_pool2d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, int[] dilation=1, "
      "bool ceil_mode=False)", "nn", kind="composite", promotion=rules.same, dtypes="numeric", meta=_max_pool_meta,
      normalize=_pool_normalize, composite=_max_pool2d, reference=_max_pool_reference,
      samples=_max_pool_samples, method=False, onnx=_max_pool2d_onnx,
      derivative={"input": lambda grad, input, kernel_size, stride, padding, dilation, ceil_mode:
                  F.max_pool2d_backward(grad, input, kernel_size, stride, padding, dilation, ceil_mode)},
      doc="the maximum of each (dilated) window; padding counts as -inf; NaN propagates")


# -- the pooling gradients, as ops of their own ------------------------------------------------------------
# A backend overrides each with one kernel (the CPU one loops over the kernel taps); their core definitions
# are Ember ops, which autograd decomposes when the gradient itself is differentiated. Like PyTorch's
# max_pool2d_with_indices_backward and avg_pool2d_backward, they take the input (max pooling re-finds each
# window's maximum in it; average pooling needs only its shape).

def _pool_backward_meta(forward_meta, op_name: str):
    def meta(grad_output, x, *attrs):
        expected = forward_meta(x, *attrs)
        require(shape(grad_output) == expected, op_name, f"grad_output must have the pooled output's shape "
                f"{expected}", grad_output, x)
        return shape(x)
    return meta


def _pool_backward_samples(forward_samples, forward_reference):
    """The forward's samples with an incoming gradient of the output's shape in front."""
    def samples(make, dtype):
        for sample in forward_samples(make, dtype):
            x = sample.args[0]
            out = forward_reference(np.zeros(tuple(x.shape)), *sample.args[1:], **sample.kwargs)
            yield Sample((make(out.shape),) + sample.args, sample.kwargs, sample.note)
    return samples


def _max_pool2d_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Each window's gradient goes to its first maximum, or to its last NaN where it has one (the element
    PyTorch's loops pick); overlapping windows add up. In Ember ops: the chosen tap of every window becomes
    a position in the padded plane, and one scatter_add sums the gradients there."""
    x, batched = with_batch(input, 2)
    grad = grad_output if batched else F.unsqueeze(grad_output, 0)
    n, c, h, w = x.shape
    (oh, ow), right = _pool_extent((h, w), kernel_size, stride, padding, dilation, ceil_mode)
    kw, taps = kernel_size[1], kernel_size[0] * kernel_size[1]
    attrs = (kernel_size, stride, padding, dilation, ceil_mode)
    windows = F.reshape(_pool_windows(x, *attrs, _lowest(x.dtype)), (n, c, oh, ow, taps))
    # padding is no candidate, even where every element of a window is -inf
    inside = F.reshape(_pool_windows(F.ones((1, 1, h, w), device=x.device), *attrs, 0.0), (1, 1, oh, ow, taps))
    best = F.amax(windows, -1, True)
    hits = F.logical_and(F.logical_or(F.eq(windows, best), F.isnan(windows)), F.gt(inside, 0))
    order = F.arange(taps, device=x.device)
    first, last = F.amin(F.where(hits, order, taps), -1), F.amax(F.where(hits, order, -1), -1)
    tap = F.where(F.isnan(F.squeeze(best, -1)), last, first)
    width = w + padding[1] + right[1]  # of the padded plane
    rows = F.add(F.unsqueeze(F.mul(F.arange(oh, device=x.device), stride[0]), 1),
                 F.mul(F.floor_divide(tap, kw), dilation[0]))
    cols = F.add(F.mul(F.arange(ow, device=x.device), stride[1]), F.mul(F.remainder(tap, kw), dilation[1]))
    index = F.reshape(F.add(F.mul(rows, width), cols), (n, c, oh * ow))
    height = h + padding[0] + right[0]
    plane = F.zeros((n, c, height * width), dtype=grad.dtype, device=grad.device)
    with vouched():  # every index is a tap inside the padded plane, by construction
        plane = F.scatter_add(plane, 2, index, F.reshape(grad, (n, c, oh * ow)))
    plane = F.reshape(plane, (n, c, height, width))
    plane = F.slice(F.slice(plane, 2, padding[0], padding[0] + h), 3, padding[1], padding[1] + w)
    return without_batch(plane, batched)


def _max_pool_backward_reference(grad_output, x, kernel_size, stride=None, padding=0, dilation=1,
                                 ceil_mode=False):
    """PyTorch's loop: the first element inside the input, replaced by every later larger one or NaN."""
    x = np.asarray(x, np.float64)
    out = np.zeros(x.shape)
    for i, j, rows, cols, _, _ in _pool_reference_windows(x, kernel_size, stride, padding, dilation, ceil_mode):
        for lead in np.ndindex(x.shape[:-2]):
            best, chosen = -np.inf, (rows[0], cols[0])
            for r in rows:
                for c in cols:
                    value = x[lead + (r, c)]
                    if value > best or np.isnan(value):
                        best, chosen = value, (r, c)
            out[lead + chosen] += grad_output[lead + (i, j)]
    return out


def _max_pool_backward_samples(make, dtype):
    yield from _pool_backward_samples(_max_pool_samples, _max_pool_reference)(make, dtype)
    if dtype.is_floating_point:  # few distinct values: many tied maxima, the first of which wins
        ties = F.round(make((2, 2, 6, 7), low=-2, high=2))
        yield Sample((make((2, 2, 5, 6)), ties, 2, 1), note="ties, overlapping windows", gradcheck=False)


defop("max_pool2d_backward(Tensor grad_output, Tensor input, int[] kernel_size, int[]? stride=None, "
      "int[] padding=0, int[] dilation=1, bool ceil_mode=False)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_pool_backward_meta(_max_pool_meta, "max_pool2d_backward"),
      normalize=_pool_normalize, composite=_max_pool2d_backward,
      reference=_max_pool_backward_reference, samples=_max_pool_backward_samples, method=False,
      doc="the gradient of max_pool2d with respect to its input: each window's gradient to its first maximum")


_avg_pool_normalize = _pool_normalize


def _avg_pool_meta(x, k, s, p, ceil, *rest):
    return _pool_meta("avg_pool2d", x, k, s, p, (1, 1), ceil)


def _avg_pool2d_onnx(g, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """AveragePool; a divisor_override rescales the mean of full windows (count_include_pad=1 divides every
    window by the kernel's size unless ceil mode clips it, which has no ONNX form then)."""
    include = count_include_pad or divisor_override is not None
    if divisor_override is not None and ceil_mode:
        size = g.static(g.shape_of(input)[-2:], "input size")
        if any(_pool_extent(size, kernel_size, stride, padding, (1, 1), True)[1]):
            g.fail("divisor_override with a ceil-mode window clipped by the input's end has no ONNX form")

    def build(x):
        out = g.op("AveragePool", x, kernel_shape=list(kernel_size), strides=list(stride), pads=list(padding) * 2,
                   ceil_mode=int(ceil_mode), count_include_pad=int(include))
        if divisor_override is None:
            return out
        return g.op("Mul", out, g.const(kernel_size[0] * kernel_size[1] / divisor_override, g.compute))
    return onnx_batched(g, input, 2, build)


defop("avg_pool2d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, "
      "bool count_include_pad=True, int? divisor_override=None)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_avg_pool_meta, normalize=_avg_pool_normalize, composite=_avg_pool2d,
      reference=_avg_pool_reference, samples=_avg_pool_samples, method=False, onnx=_avg_pool2d_onnx,
      derivative={"input": lambda grad, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override: F.avg_pool2d_backward(grad, input, kernel_size, stride, padding, ceil_mode,
                                                          count_include_pad, divisor_override)},
      doc="the mean of each window; count_include_pad counts zero padding in the divisor")
defop("avg_pool2d_backward(Tensor grad_output, Tensor input, int[] kernel_size, int[]? stride=None, "
      "int[] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)", "nn",
      kind="composite", promotion=rules.same, dtypes="float",
      meta=_pool_backward_meta(_avg_pool_meta, "avg_pool2d_backward"),
      normalize=_avg_pool_normalize, composite=_avg_pool2d_backward,
      reference=_avg_pool_backward_reference, samples=_pool_backward_samples(_avg_pool_samples, _avg_pool_reference),
      method=False, doc="the gradient of avg_pool2d with respect to its input: each output's gradient spread "
                        "over its window by the forward's divisor")


# -- adaptive average pooling ---------------------------------------------------------------------------------

def _bins(size: int, out: int) -> list:
    """PyTorch's adaptive bins: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_meta(op_name: str, n: int):
    def meta(x, output_size):
        in_shape = shape(x)
        require(len(in_shape) in (n + 1, n + 2) and all(in_shape[-n - 1:]), op_name,
                f"expected a {n + 1}-D (C, *spatial) or {n + 2}-D (N, C, *spatial) input with non-zero channels and "
                f"spatial sizes", x)
        return in_shape[:-n] + tuple(output_size)
    return meta


def _adaptive_mean(x, dim: int, out: int):
    size = x.shape[dim]
    if size == out:
        return x
    if size % out == 0:
        split = x.shape[:dim] + (out, size // out) + x.shape[dim + 1:]
        return F.mean(F.reshape(x, split), dim + 1)
    return F.cat([F.mean(F.slice(x, dim, a, b), dim, True) for a, b in _bins(size, out)], dim)


def _adaptive_avg_pool(x, output_size):
    """Bins are boxes, so averaging along each spatial dim in turn gives each bin's mean (any number of dims)."""
    n = len(output_size)
    if 0 in output_size:
        return F.zeros(tuple(x.shape[:-n]) + tuple(output_size), dtype=x.dtype, device=x.device)
    for d, out in enumerate(output_size):
        x = _adaptive_mean(x, x.ndim - n + d, out)
    return x


def _adaptive_mean_backward(grad, dim: int, size: int):
    """The adjoint of ``_adaptive_mean`` along dim: every input element gets the gradient of each bin it is
    in, over the bin's length. Equal bins repeat each gradient; overlapping ones take a matmul with the
    (size, out) matrix of 1 / length on each bin's elements."""
    out = grad.shape[dim]
    if size == out:
        return grad
    if size % out == 0:
        step = size // out
        spread = F.unsqueeze(F.div(grad, step), dim + 1)
        spread = F.expand(spread, spread.shape[:dim + 1] + (step,) + spread.shape[dim + 2:])
        return F.flatten(spread, dim, dim + 1)
    bins = F.arange(out, device=grad.device)
    start = F.floor_divide(F.mul(bins, size), out)
    end = F.neg(F.floor_divide(F.mul(F.add(bins, 1), -size), out))  # ceil((b + 1) * size / out)
    position = F.unsqueeze(F.arange(size, device=grad.device), 1)
    member = F.to_dtype(F.logical_and(F.ge(position, start), F.lt(position, end)), grad.dtype)
    weights = F.div(member, F.sub(end, start))
    return F.transpose(F.matmul(F.transpose(grad, dim, -1), F.transpose(weights, 0, 1)), dim, -1)


def _adaptive_derivative(grad, input, output_size):
    """The forward's separable means, adjoined in turn from the last dim back."""
    n = len(output_size)
    if 0 in output_size:
        return F.zeros_like(input)
    for d in reversed(range(n)):
        grad = _adaptive_mean_backward(grad, grad.ndim - n + d, input.shape[input.ndim - n + d])
    return grad


def _adaptive_reference(n: int):
    def reference(x, output_size):
        sizes = expand_attr(output_size, n)
        spatial = x.shape[-n:]
        sizes = tuple(size if out is None else out for size, out in zip(spatial, sizes))
        x = np.asarray(x, np.float64)
        out = np.zeros(x.shape[:-n] + sizes)
        for o in np.ndindex(*sizes):
            box = tuple(slice(*_bins(size, count)[i]) for size, count, i in zip(spatial, sizes, o))
            out[(Ellipsis,) + o] = np.mean(x[(Ellipsis,) + box], axis=tuple(range(-n, 0)))
        return out
    return reference


def _adaptive_samples(make, dtype):
    yield Sample((make((2, 3, 6, 6)), 3), note="divisible")
    yield Sample((make((2, 3, 7, 5)), (3, 2)), note="overlapping bins")
    yield Sample((make((3, 5, 7), noncontiguous=True), (4, None)), note="unbatched, None keeps a size")
    yield Sample((make((1, 2, 5, 5)), 1), note="global average")
    yield Sample((make((1, 2, 3, 2)), (5, 4)), note="more bins than inputs")


def _adaptive_avg_pool2d_onnx(g, input, output_size):
    """GlobalAveragePool for a 1 x 1 output, an exact AveragePool where the output size divides the input's."""
    size = g.static(g.shape_of(input)[-2:], "input size")
    if tuple(output_size) == (1, 1):
        return onnx_batched(g, input, 2, lambda x: g.op("GlobalAveragePool", x))
    if not all(o and n % o == 0 for n, o in zip(size, output_size)):
        g.fail(f"output_size {tuple(output_size)} does not divide the input size {tuple(size)}: PyTorch's uneven "
               f"bins have no ONNX form")
    kernel = [n // o for n, o in zip(size, output_size)]
    return onnx_batched(g, input, 2, lambda x: g.op("AveragePool", x, kernel_shape=kernel, strides=kernel))


defop("adaptive_avg_pool2d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_adaptive_meta("adaptive_avg_pool2d", 2), normalize=_adaptive_normalize(2),
      composite=_adaptive_avg_pool, derivative={"input": _adaptive_derivative},
      reference=_adaptive_reference(2), samples=_adaptive_samples, method=False,
      onnx=_adaptive_avg_pool2d_onnx,
      doc="average pooling to a fixed output size (an int, or a pair whose None keeps the input size)")


def _adaptive_1d_samples(make, dtype):
    yield Sample((make((2, 3, 6)), 3), note="divisible")
    yield Sample((make((3, 7), noncontiguous=True), 4), note="unbatched, overlapping bins")
    yield Sample((make((1, 2, 3)), 5), note="more bins than inputs")


def _adaptive_3d_samples(make, dtype):
    yield Sample((make((1, 2, 4, 6, 4)), 2), note="divisible")
    yield Sample((make((2, 5, 3, 4), noncontiguous=True), (3, None, 3)), note="unbatched, overlapping bins, None")
    yield Sample((make((1, 2, 3, 2, 3)), (1, 1, 1)), note="global average")


defop("adaptive_avg_pool1d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_adaptive_meta("adaptive_avg_pool1d", 1), normalize=_adaptive_normalize(1),
      composite=_adaptive_avg_pool, derivative={"input": _adaptive_derivative},
      reference=_adaptive_reference(1), samples=_adaptive_1d_samples, method=False,
      doc="average pooling of (N, C, L) or (C, L) input to a fixed output length, over PyTorch's adaptive bins")
defop("adaptive_avg_pool3d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_adaptive_meta("adaptive_avg_pool3d", 3), normalize=_adaptive_normalize(3),
      composite=_adaptive_avg_pool, derivative={"input": _adaptive_derivative},
      reference=_adaptive_reference(3), samples=_adaptive_3d_samples, method=False,
      doc="average pooling of (N, C, D, H, W) input to a fixed output size (an int, or three whose None keeps "
          "the input size)")


# -- average pooling over 1 and 3 spatial dims ----------------------------------------------------------------

def _avg_pool_meta_nd(op_name: str, n: int):
    def meta(x, kernel_size, stride, padding, ceil_mode, *rest):
        in_shape = shape(x)
        require(len(in_shape) in (n + 1, n + 2) and all(in_shape[-n - 1:]), op_name,
                f"expected a {n + 1}-D (C, *spatial) or {n + 2}-D (N, C, *spatial) input with non-zero channels and "
                f"spatial sizes", x)
        out = tuple(_pool_output_size(size, k, s, p, 1, ceil_mode)
                    for size, k, s, p in zip(in_shape[-n:], kernel_size, stride, padding))
        require(all(o > 0 for o in out), op_name,
                f"calculated output size {out} is too small for kernel_size={kernel_size}, padding={padding}", x)
        return in_shape[:-n] + out
    return meta


def _avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad):
    """An avg_pool2d over a height of one (the backends' 2-D kernels serve it)."""
    out = F.avg_pool2d(F.unsqueeze(x, -2), (1,) + kernel_size, (1,) + stride, (0,) + padding, ceil_mode,
                       count_include_pad)
    return F.squeeze(out, -2)


def _avg_pool_nd(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Window sums over the zero-padded input, divided by each window's count: the product of its per-dim
    counts (_pool_counts), since windows are boxes."""
    n = len(kernel_size)
    x, batched = with_batch(x, n)
    ones, sizes = (1,) * n, tuple(x.shape[2:])
    out, right = _pool_extent(sizes, kernel_size, stride, padding, ones, ceil_mode)
    x = F.pad(x, flat_padding(tuple(zip(padding, right))))
    windows = sliding_windows(x, kernel_size, stride, ones)
    for axis, length in enumerate(out, start=2):
        windows = F.slice(windows, axis, 0, length)
    total = F.sum(windows, tuple(range(-n, 0)))
    if divisor_override is not None:
        return without_batch(F.div(total, divisor_override), batched)
    count = None
    for d, geometry in enumerate(zip(sizes, kernel_size, stride, padding, out)):
        per_dim = _pool_counts(*geometry, count_include_pad, x.device)
        per_dim = F.reshape(per_dim, tuple(out[d] if e == d else 1 for e in range(n)))
        count = per_dim if count is None else F.mul(count, per_dim)
    return without_batch(F.div(total, count), batched)


def _avg_pool_reference_nd(n: int):
    def reference(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
        k = expand_attr(kernel_size, n)
        s = expand_attr(stride, n) if stride not in (None, (), []) else k
        p = expand_attr(padding, n)
        x = np.asarray(x, np.float64)
        spatial = x.shape[-n:]
        out = [_pool_output_size(size, *a, 1, ceil_mode) for size, *a in zip(spatial, k, s, p)]
        result = np.zeros(x.shape[:-n] + tuple(out))
        for o in np.ndindex(*out):
            starts = [i * st - pd for i, st, pd in zip(o, s, p)]
            ends = [min(a + kk, size + pd) for a, kk, size, pd in zip(starts, k, spatial, p)]
            box = tuple(slice(max(a, 0), min(b, size)) for a, b, size in zip(starts, ends, spatial))
            if divisor_override:
                divisor = divisor_override
            elif count_include_pad:
                divisor = math.prod(b - a for a, b in zip(starts, ends))
            else:
                divisor = math.prod(sl.stop - sl.start for sl in box)
            result[(Ellipsis,) + o] = np.sum(x[(Ellipsis,) + box], axis=tuple(range(-n, 0))) / divisor
        return result
    return reference


def _avg_pool1d_samples(make, dtype):
    yield Sample((make((2, 3, 8)), 2))
    yield Sample((make((2, 3, 9)), 3, 2, 1), {"count_include_pad": False})
    yield Sample((make((3, 7), noncontiguous=True), 3, 2, 1, True), note="unbatched, ceil mode")


def _avg_pool3d_samples(make, dtype):
    yield Sample((make((1, 2, 4, 4, 6)), 2))
    yield Sample((make((2, 3, 5, 4, 5)), (3, 2, 3), (2, 1, 2), 1), {"count_include_pad": False})
    yield Sample((make((2, 5, 4, 5), noncontiguous=True), 3, 2, 1, True), note="unbatched, ceil mode")
    yield Sample((make((1, 1, 4, 4, 4)), 2), {"divisor_override": 3})


defop("avg_pool1d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, "
      "bool count_include_pad=True)", "nn", kind="composite", promotion=rules.same, dtypes="float",
      meta=_avg_pool_meta_nd("avg_pool1d", 1), normalize=pool_normalize(1), composite=_avg_pool1d,
      reference=_avg_pool_reference_nd(1), samples=_avg_pool1d_samples, method=False,
      doc="the mean of each window of (N, C, L) or (C, L) input; count_include_pad counts zero padding")
defop("avg_pool3d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, "
      "bool count_include_pad=True, int? divisor_override=None)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_avg_pool_meta_nd("avg_pool3d", 3), normalize=pool_normalize(3), composite=_avg_pool_nd,
      reference=_avg_pool_reference_nd(3), samples=_avg_pool3d_samples, method=False,
      doc="the mean of each window of (N, C, D, H, W) input; count_include_pad counts zero padding in the divisor")
