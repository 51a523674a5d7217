"""Neural-network ops: padding, convolution, pooling, softmax, one_hot and activations.

Every op here is a composite written in Ember ops, so it runs on any backend; a backend may
override any of them with a faster kernel (the CPU backend overrides all but one_hot).
``normalize`` turns PyTorch's "int or tuple" attributes into one value per spatial dim before meta,
composite or kernel see them.
Convolution padding reaches them as ``((before, after), ...)`` per spatial dim, because
``padding='same'`` may pad one side more than the other.

Padding, convolution and pooling declare their derivatives, so that training runs the backends' fast
forward kernels and a few whole-tensor ops backward instead of recording the decomposition's many small
ones: convolution and transposed convolution are each other's adjoints, and the pooling gradients are ops
of their own (``max_pool2d_backward``, ``avg_pool2d_backward``) that a backend can override too.
"""
from __future__ import annotations

import math

import numpy as np

from .. import rules
from ..dispatcher import note_value_read
from ..dtypes import int64
from ..errors import ShapeError
from ..meta import require, shape
from ..schema import FLOAT32_ON_CUDA, Sample, defop
from . import F
from .onnx_support import INT64_MAX, index_as_int64
from .opmath import in_opmath, large_magnitudes, rounded, widened

_erf = np.vectorize(math.erf, otypes=[np.float64])


# -- attribute helpers ------------------------------------------------------------------------------

def _ints(op_name: str, name: str, value, n: int) -> tuple:
    """An int or a list of 1 or n ints -> n ints, as PyTorch accepts ``stride=2`` or ``stride=(2, 1)``."""
    if isinstance(value, (list, tuple)):
        value = tuple(value)
    else:
        value = (value,)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{op_name}(): argument '{name}' must be an int or a tuple of ints, got {value!r}")
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        value *= n
    if len(value) != n:
        raise ValueError(f"{op_name}: expected {name} to be a single integer or a list of {n} integers, "
                         f"got {name}={list(value)}")
    return value


def _at_least(op_name: str, name: str, values: tuple, low: int) -> tuple:
    if any(v < low for v in values):
        kind = "positive" if low == 1 else "non-negative"
        raise ValueError(f"{op_name}: {name} must be {kind}, got {name}={values}")
    return values


def _expand(value, n: int) -> tuple:
    """The references' reading of an "int or tuple" attribute (they get the caller's raw values)."""
    value = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return value * n if len(value) == 1 else value


def _onnx_batched(g, input, spatial: int, build):
    """ONNX's convolution and pooling nodes need a batch dim: an unbatched input gets one around ``build``."""
    if len(g.shape_of(input)) == spatial + 2:
        return build(input)
    return g.squeeze(build(g.unsqueeze(input, [0])), [0])


def _batched(x, n: int):
    """(input with a batch dim, whether it had one): unbatched (C, *spatial) input gets a batch of 1."""
    return (x, True) if x.ndim == n + 2 else (F.unsqueeze(x, 0), False)


def _unbatch(out, batched: bool):
    return out if batched else F.squeeze(out, 0)


# -- pad ---------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_pairs(pad: tuple) -> list:
    """PyTorch's flat pad list (last dim first) -> [(dim offset from the end, before, after), ...]."""
    return [(k + 1, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]


def _pad_normalize(op, values):
    x, pad, mode, value = values
    ndim = len(shape(x))
    if len(pad) % 2:
        raise ValueError(f"pad: the padding length must be divisible by 2, got pad={pad}")
    if len(pad) // 2 > ndim:
        raise ValueError(f"pad: pad={pad} pads {len(pad) // 2} dimension(s) but the input of shape "
                         f"{shape(x)} has only {ndim}")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: unknown mode {mode!r}; expected one of {', '.join(_PAD_MODES)}")
    if mode != "constant":
        if value is not None and value != 0:
            raise ValueError(f"pad: mode {mode!r} doesn't take a value argument, got value={value}")
        k = len(pad) // 2
        if not 1 <= k <= 3 or ndim not in (k + 1, k + 2):
            raise ShapeError(f"pad: mode {mode!r} with {len(pad)} padding values pads the last {k} dim(s) of a "
                             f"{k + 1}-D or {k + 2}-D input, got input of shape {shape(x)}")
        if mode != "circular" and not all(shape(x)[-k - 1:]):
            raise ShapeError(f"pad: mode {mode!r} needs non-empty channel and padded dims (only the batch dim may "
                             f"be empty), got input of shape {shape(x)}")


def _pad_meta(x, pad, mode="constant", value=None):
    out = list(shape(x))
    for back, before, after in _pad_pairs(pad):
        size = out[-back]
        if mode == "reflect":
            require(before < size and after < size, "pad",
                    f"reflect padding {(before, after)} must be smaller than the padded dimension's size {size}", x)
        if mode == "circular":
            cropped = size - max(-before, 0) - max(-after, 0)
            require(before <= cropped and after <= cropped, "pad",
                    f"circular padding {(before, after)} wraps around more than once "
                    f"(dimension of size {size})", x)
        require(size + before + after >= 0, "pad",
                f"padding {(before, after)} would give dim {len(out) - back} a negative size", x)
        out[-back] = size + before + after
    return tuple(out)


def _pad_constant(x, dim: int, before: int, after: int, value):
    if before < 0 or after < 0:  # negative padding crops
        x = F.slice(x, dim, max(-before, 0), x.shape[dim] - max(-after, 0))
    pieces = [x]
    for width, front in ((before, True), (after, False)):
        if width > 0:
            filler_shape = tuple(width if d == dim else s for d, s in enumerate(x.shape))
            filler = F.full(filler_shape, value, dtype=x.dtype, device=x.device)
            pieces.insert(0 if front else len(pieces), filler)
    return F.cat(pieces, dim) if len(pieces) > 1 else x


def _edge_pieces(x, dim: int, before: int, after: int, mode: str):
    """The slabs to put before and after x along dim for the reflect, replicate and circular modes."""
    size = x.shape[dim]
    if mode == "replicate":
        def edge(i, width):
            slab = F.slice(x, dim, i, i + 1)
            return F.expand(slab, tuple(width if d == dim else s for d, s in enumerate(slab.shape)))
        return ([edge(0, before)] if before > 0 else []), ([edge(size - 1, after)] if after > 0 else [])
    if mode == "circular":
        return ([F.slice(x, dim, size - before, size)] if before > 0 else []), \
               ([F.slice(x, dim, 0, after)] if after > 0 else [])
    # reflect: mirrored around the first and last element, without repeating them; no flip op needed
    front = [F.slice(x, dim, i, i + 1) for i in range(before, 0, -1)]
    back = [F.slice(x, dim, i, i + 1) for i in range(size - 2, size - 2 - after, -1)]
    return front, back


def _pad(x, pad, mode="constant", value=None):
    for back, before, after in _pad_pairs(pad):
        dim = x.ndim - back
        if mode == "constant":
            x = _pad_constant(x, dim, before, after, 0.0 if value is None else value)
            continue
        if mode == "circular":  # circular crops first and wraps the cropped tensor, like PyTorch
            x = _pad_constant(x, dim, min(before, 0), min(after, 0), 0.0)
            before, after = max(before, 0), max(after, 0)
        # reflect and replicate read their slabs from the uncropped input, then crop
        front, end = _edge_pieces(x, dim, max(before, 0), max(after, 0), mode)
        if front or end:
            x = F.cat(front + [x] + end, dim)
        if before < 0 or after < 0:
            x = F.slice(x, dim, max(-before, 0), x.shape[dim] - max(-after, 0))
    return x


def _pad_reference(x, pad, mode="constant", value=None):
    """Index arithmetic per padded dim: which source element each output position reads."""
    for back, before, after in _pad_pairs(tuple(pad)):
        axis = x.ndim - back
        size = x.shape[axis]
        if mode == "circular":
            start, stop = max(-before, 0), size - max(-after, 0)
            x = np.take(x, np.arange(start, stop), axis=axis)
            size, before, after = stop - start, max(before, 0), max(after, 0)
        source = np.arange(-before, size + after)
        if mode == "constant":
            inside = (source >= 0) & (source < size)
            taken = np.take(x, np.clip(source, 0, max(size - 1, 0)), axis=axis) if size else \
                np.zeros(x.shape[:axis] + (len(source),) + x.shape[axis + 1:], x.dtype)
            mask = inside.reshape((-1,) + (1,) * (x.ndim - axis - 1))
            x = np.where(mask, taken, 0 if value is None else value).astype(x.dtype)
            continue
        if mode == "reflect":
            source = np.abs(source)
            source = np.where(source >= size, 2 * (size - 1) - source, source)
        elif mode == "replicate":
            source = np.clip(source, 0, size - 1)
        else:
            source = source % size
        x = np.take(x, source, axis=axis)
    return x


def _pad_samples(make, dtype):
    yield Sample((make((2, 3, 4)), (1, 2)))
    yield Sample((make((2, 3, 4)), (1, 0, 0, 2)), {"value": 3.0})
    yield Sample((make((2, 5, 6), noncontiguous=True), (-1, 2, 2, -2)), note="negative padding crops")
    yield Sample((make((3,)), (0, 0)))
    yield Sample((make((2, 3, 4)), (0, 0, 0, 0, 1, 1)), note="padding the first dim")
    if dtype.is_floating_point:
        for mode in ("reflect", "replicate", "circular"):
            yield Sample((make((2, 3, 5)), (2, 3)), {"mode": mode})
            yield Sample((make((1, 2, 4, 5)), (1, 2, 3, 0)), {"mode": mode})
            yield Sample((make((4, 5)), (-1, 2)), {"mode": mode}, note="negative padding")
            yield Sample((make((1, 2, 3, 3, 4)), (1, 1, 1, 2, 2, 1)), {"mode": mode})


def _pad_sources(grad, dim: int, before: int, after: int, mode: str):
    """Which input element each output position along dim reads, for the reflect, replicate and circular
    modes (``_pad_reference``'s index arithmetic, in Ember ops on grad's device)."""
    size = grad.shape[dim] - before - after  # the input's size along dim
    if mode == "circular":  # crops first, then wraps the cropped range
        start = max(-before, 0)
        kept = size - start - max(-after, 0)
        wrapped = F.remainder(F.arange(-max(before, 0), kept + max(after, 0), device=grad.device), kept)
        return F.add(wrapped, start)
    source = F.arange(-before, size + after, device=grad.device)
    if mode == "replicate":
        return F.clamp(source, 0, size - 1)
    source = F.abs(source)  # reflect: mirrored around the first and the last element
    return F.where(F.ge(source, size), F.sub(2 * (size - 1), source), source)


def _pad_derivative(grad, pad, mode):
    """constant: the same pad negated, so padding is cropped off and crops come back as zeros. The other
    modes read some input elements several times: each padded dim sums its gradient back onto the
    elements it read (a scatter_add along that dim; the dims are independent, so their order is free)."""
    if mode == "constant":
        return F.pad(grad, tuple(-p for p in pad))
    for back, before, after in _pad_pairs(pad):
        dim = grad.ndim - back
        source = _pad_sources(grad, dim, before, after, mode)
        index = F.expand(F.reshape(source, (-1,) + (1,) * (back - 1)), tuple(grad.shape))
        size = grad.shape[dim] - before - after
        zeros = F.zeros(tuple(size if d == dim else s for d, s in enumerate(grad.shape)), dtype=grad.dtype,
                        device=grad.device)
        grad = F.scatter_add(zeros, dim, index, grad)
    return grad


def _pad_onnx(g, input, pad, mode, value):
    """Negative pads crop first (Slice), then Pad (constant, reflect, edge) or, for circular, Slice and Concat
    of the wrapped ends (ONNX's wrap mode is opset 19+); PyTorch crops before it reflects or wraps too."""
    rank = len(g.shape_of(input))
    begins, ends = [0] * rank, [0] * rank
    for back, before, after in _pad_pairs(g.static(pad, "pad")):
        begins[rank - back], ends[rank - back] = before, after
    x = input
    crops = [(d, -min(b, 0), min(e, 0)) for d, (b, e) in enumerate(zip(begins, ends)) if b < 0 or e < 0]
    if crops:
        x = g.op("Slice", x, g.ints([c[1] for c in crops]), g.ints([c[2] or INT64_MAX for c in crops]),
                 g.ints([c[0] for c in crops]))
    begins, ends = [max(b, 0) for b in begins], [max(e, 0) for e in ends]
    if not any(begins) and not any(ends):
        return g.op("Identity", x)
    if mode == "circular":
        for d, (b, e) in enumerate(zip(begins, ends)):
            if b or e:
                head = [g.op("Slice", x, g.ints([-b]), g.ints([INT64_MAX]), g.ints([d]))] if b else []
                tail = [g.op("Slice", x, g.ints([0]), g.ints([e]), g.ints([d]))] if e else []
                x = g.op("Concat", *head, x, *tail, axis=d)
        return x
    fill = g.const(0 if value is None else value, g.compute) if mode == "constant" else None
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}[mode]
    return g.op("Pad", x, g.ints(begins + ends), fill, mode=onnx_mode)


defop("pad(Tensor input, int[] pad, str mode='constant', float? value=None)", "nn", kind="composite",
      derivative={"input": _pad_derivative},
      promotion=rules.same, meta=_pad_meta, normalize=_pad_normalize, composite=_pad,
      reference=_pad_reference, samples=_pad_samples, method=False, onnx=_pad_onnx,
      doc="pads (or with negative values crops) the last dims; pad lists (before, after) pairs from the last "
          "dim backwards; modes constant, reflect, replicate and circular as in PyTorch")


# -- convolution --------------------------------------------------------------------------------------

def _conv_padding(op_name: str, padding, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """PyTorch's padding forms -> ((before, after), ...) per spatial dim; 'same' puts any odd pixel after."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding != "same":
            raise ValueError(f"{op_name}: invalid padding string {padding!r}; expected 'valid', 'same' or ints")
        if any(s != 1 for s in stride):
            raise ValueError(f"{op_name}: padding='same' is not supported for strided convolutions "
                             f"(stride={stride})")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, (list, tuple)) and len(padding) == n and all(isinstance(p, tuple) for p in padding):
        pairs = tuple(_ints(op_name, "padding", p, 2) for p in padding)
    else:
        pairs = tuple((p, p) for p in _ints(op_name, "padding", padding, n))
    _at_least(op_name, "padding", tuple(v for pair in pairs for v in pair), 0)
    return pairs


def _conv_normalize(n: int):
    def normalize(op, values):
        weight = values[1]
        require(len(shape(weight)) == n + 2, op.name, f"expected a {n + 2}-D weight "
                f"(out_channels, in_channels / groups, *kernel)", weight)
        values[3] = _at_least(op.name, "stride", _ints(op.name, "stride", values[3], n), 1)
        values[5] = _at_least(op.name, "dilation", _ints(op.name, "dilation", values[5], n), 1)
        values[4] = _conv_padding(op.name, values[4], shape(weight)[2:], values[3], values[5])
        if values[6] <= 0:
            raise ValueError(f"{op.name}: groups must be positive, got groups={values[6]}")
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


def _windows(x, kernel: tuple, stride: tuple, dilation: tuple):
    """(N, C, H, W) -> view (N, C, OH, OW, kh, kw) of the dilated sliding windows."""
    for axis, (k, s, d) in enumerate(zip(kernel, stride, dilation), start=2):
        x = F.unfold(x, axis, d * (k - 1) + 1, s)
    for axis, d in ((4, dilation[0]), (5, dilation[1])):
        if d > 1:
            x = F.slice(x, axis, None, None, d)
    return x


def _conv2d(x, weight, bias, stride, padding, dilation, groups):
    """im2col: every window becomes a column, and one batched matmul per group does the rest."""
    x, batched = _batched(x, 2)
    (top, bottom), (left, right) = padding
    if top or bottom or left or right:
        x = F.pad(x, (left, right, top, bottom))
    out_channels = weight.shape[0]
    windows = _windows(x, tuple(weight.shape[2:]), stride, dilation)
    n, _, oh, ow = windows.shape[:4]
    depth = weight.numel() // out_channels  # in_channels / groups * kh * kw, the length of one column
    cols = F.reshape(F.permute(windows, (0, 1, 4, 5, 2, 3)), (n, groups, depth, oh * ow))
    out = F.matmul(F.reshape(weight, (groups, out_channels // groups, depth)), cols)
    out = F.reshape(out, (n, out_channels, oh, ow))
    if bias is not None:
        out = F.add(out, F.reshape(bias, (out_channels, 1, 1)))
    return _unbatch(out, batched)


def _conv1d(x, weight, bias, stride, padding, dilation, groups):
    """A conv2d over a height of one."""
    out = F.conv2d(F.unsqueeze(x, -2), F.unsqueeze(weight, -2), bias, (1,) + stride, ((0, 0),) + padding,
                   (1,) + dilation, groups)
    return F.squeeze(out, -2)


def _conv_reference(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct N-d convolution: one strided input slice per kernel tap, contracted over channels."""
    n = weight.ndim - 2
    batched = x.ndim == n + 2
    x = np.asarray(x, np.float64) if batched else np.asarray(x, np.float64)[None]
    stride, dilation = _expand(stride, n), _expand(dilation, n)
    if padding == "valid":
        pads = [(0, 0)] * n
    elif padding == "same":
        pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(weight.shape[2:], dilation)]
    else:
        pads = [(v, v) for v in _expand(padding, n)]
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    kernel = weight.shape[2:]
    out_size = [(x.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out = np.zeros((x.shape[0], weight.shape[0], *out_size))
    in_group, out_group = weight.shape[1], weight.shape[0] // groups
    for g in range(groups):
        xs = x[:, g * in_group:(g + 1) * in_group]
        ws = np.asarray(weight[g * out_group:(g + 1) * out_group], np.float64)
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


# The derivatives of convolution. conv2d is linear in its input and in its weight: the input's gradient is
# the transposed convolution of the output's gradient with the same weight, the weight's gradient pairs
# every input window (the forward's im2col columns) with the gradient of the output it made, and
# conv_transpose2d, the adjoint of conv2d, swaps the two roles. Both directions call the other op, so
# either one's backward is differentiable in turn.

def _conv2d_input_grad(grad, weight, size: tuple, stride, padding, dilation, groups: int):
    """conv_transpose2d of grad: it crops the padding common to both sides, output_padding restores the
    trailing rows and columns no window reached (fewer than stride), and a one-sided excess of padding
    ('same' with an even kernel) is cropped afterwards."""
    common, trailing = [], []
    for n, (before, after), k, s, d, o in zip(size, padding, weight.shape[2:], stride, dilation, grad.shape[-2:]):
        common.append(min(before, after))
        trailing.append(n + before + after - ((o - 1) * s + d * (k - 1) + 1))
    out = F.conv_transpose2d(grad, weight, None, stride, tuple(common), tuple(trailing), groups, dilation)
    for dim, n, (before, _), c in zip((-2, -1), size, padding, common):
        if out.shape[dim] != n:
            out = F.slice(out, dim, before - c, before - c + n)
    return out


def _conv2d_weight_grad(input, grad, kernel: tuple, stride, padding, dilation, groups: int):
    """grad times the input windows, summed over the batch and the output positions: one matmul per
    group. Only the windows that have an output in grad count (conv_transpose2d's input may have fewer
    positions than its padded output has windows)."""
    x, _ = _batched(input, 2)
    g, _ = _batched(grad, 2)
    (top, bottom), (left, right) = padding
    if top or bottom or left or right:
        x = F.pad(x, (left, right, top, bottom))
    n, channels, oh, ow = g.shape
    windows = F.slice(F.slice(_windows(x, kernel, stride, dilation), 2, 0, oh), 3, 0, ow)
    depth = x.shape[1] // groups * kernel[0] * kernel[1]
    cols = F.reshape(F.permute(windows, (1, 4, 5, 0, 2, 3)), (groups, depth, n * oh * ow))
    rows = F.reshape(F.permute(g, (1, 0, 2, 3)), (groups, channels // groups, n * oh * ow))
    out = F.matmul(rows, F.transpose(cols, 1, 2))
    return F.reshape(out, (channels, x.shape[1] // groups) + tuple(kernel))


def _bias_grad(grad, spatial: int):
    """The sum over every dim but the channel one (the one before the spatial dims)."""
    return F.sum(grad, tuple(d for d in range(grad.ndim) if d != grad.ndim - spatial - 1))


def _conv2d_input_derivative(grad, input, weight, stride, padding, dilation, groups):
    return _conv2d_input_grad(grad, weight, tuple(input.shape[-2:]), stride, padding, dilation, groups)


def _conv2d_weight_derivative(grad, input, weight, stride, padding, dilation, groups):
    return _conv2d_weight_grad(input, grad, tuple(weight.shape[2:]), stride, padding, dilation, groups)


def _as_2d(t):
    """A 1-D convolution's tensor (input, weight or gradient) as a 2-D one of height 1."""
    return F.unsqueeze(t, -2)


def _conv1d_input_derivative(grad, input, weight, stride, padding, dilation, groups):
    out = _conv2d_input_grad(_as_2d(grad), _as_2d(weight), (1, input.shape[-1]), (1,) + stride,
                             ((0, 0),) + padding, (1,) + dilation, groups)
    return F.squeeze(out, -2)


def _conv1d_weight_derivative(grad, input, weight, stride, padding, dilation, groups):
    out = _conv2d_weight_grad(_as_2d(input), _as_2d(grad), (1, weight.shape[-1]), (1,) + stride,
                              ((0, 0),) + padding, (1,) + dilation, groups)
    return F.squeeze(out, -2)


def _conv_derivative(input_derivative, weight_derivative, spatial: int = 2) -> dict:
    """Per input, so that a first layer (whose input needs no gradient) skips the transposed convolution."""
    return {"input": input_derivative, "weight": weight_derivative, "bias": lambda grad: _bias_grad(grad, spatial)}


def _conv_onnx(g, input, weight, bias, stride, padding, dilation, groups):
    kernel = [int(k) for k in g.static(g.shape_of(weight)[2:], "kernel size")]
    pads = [before for before, _ in padding] + [after for _, after in padding]
    return _onnx_batched(g, input, len(kernel), lambda x: g.op(
        "Conv", x, weight, bias, kernel_shape=kernel, strides=list(stride), pads=pads, dilations=list(dilation),
        group=int(groups)))


_CONV_TAIL = "int[] stride=1, Any padding=0, int[] dilation=1, int groups=1)"
_CONV_DOC = ("{n}-D cross-correlation; padding is ints, 'valid' or 'same'; input (N, C, {dims}) or unbatched "
             "(C, {dims})")
defop(f"conv2d(Tensor input, Tensor weight, Tensor? bias=None, {_CONV_TAIL}", "nn", kind="composite",
      derivative=_conv_derivative(_conv2d_input_derivative, _conv2d_weight_derivative),
      promotion=rules.same, dtypes="float", meta=_conv_meta("conv2d"), normalize=_conv_normalize(2),
      composite=_conv2d, reference=_conv_reference, samples=_conv2d_samples, method=False, autocast="lower",
      onnx=_conv_onnx,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc=_CONV_DOC.format(n=2, dims="H, W"))
defop(f"conv1d(Tensor input, Tensor weight, Tensor? bias=None, {_CONV_TAIL}", "nn", kind="composite",
      derivative=_conv_derivative(_conv1d_input_derivative, _conv1d_weight_derivative, spatial=1),
      promotion=rules.same, dtypes="float", meta=_conv_meta("conv1d"), normalize=_conv_normalize(1),
      composite=_conv1d, reference=_conv_reference, samples=_conv1d_samples, method=False, autocast="lower",
      onnx=_conv_onnx,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc=_CONV_DOC.format(n=1, dims="L"))


# -- transposed convolution -----------------------------------------------------------------------------

def _conv_transpose_normalize(op, values):
    values[3] = _at_least(op.name, "stride", _ints(op.name, "stride", values[3], 2), 1)
    values[4] = _at_least(op.name, "padding", _ints(op.name, "padding", values[4], 2), 0)
    values[5] = _at_least(op.name, "output_padding", _ints(op.name, "output_padding", values[5], 2), 0)
    values[7] = _at_least(op.name, "dilation", _ints(op.name, "dilation", values[7], 2), 1)
    if values[6] <= 0:
        raise ValueError(f"conv_transpose2d: groups must be positive, got groups={values[6]}")
    for extra, s, d in zip(values[5], values[3], values[7]):
        if extra >= max(s, d):
            raise ValueError(f"conv_transpose2d: output_padding must be smaller than either stride or dilation, "
                             f"got output_padding={values[5]}, stride={values[3]}, dilation={values[7]}")


def _transposed_size(size, k, s, p, extra, d) -> int:
    return (size - 1) * s - 2 * p + d * (k - 1) + extra + 1


def _conv_transpose_meta(x, weight, bias, stride, padding, output_padding, groups, dilation):
    require(len(shape(weight)) == 4, "conv_transpose2d",
            "expected a 4-D weight (in_channels, out_channels / groups, kH, kW)", weight)
    ws = shape(weight)
    _check_channels("conv_transpose2d", x, weight, bias, groups, ws[0], ws[1] * groups)
    out = tuple(_transposed_size(*args) for args in zip(shape(x)[-2:], ws[2:], stride, padding,
                                                         output_padding, dilation))
    require(all(o > 0 for o in out), "conv_transpose2d",
            f"calculated output size {out} is too small (padding={padding}, stride={stride})", x, weight)
    lead = shape(x)[:1] if len(shape(x)) == 4 else ()
    return lead + (ws[1] * groups,) + out


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


def _conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """matmul to per-tap columns, then col2im: each tap's plane is spread by stride and added at its offset."""
    x, batched = _batched(x, 2)
    n, in_channels, h, w = x.shape
    _, out_group, kh, kw = weight.shape
    out_channels = out_group * groups
    taps = F.transpose(F.reshape(weight, (groups, in_channels // groups, out_group * kh * kw)), 1, 2)
    cols = F.matmul(taps, F.reshape(x, (n, groups, in_channels // groups, h * w)))
    cols = _spread(_spread(F.reshape(cols, (n, out_channels, kh, kw, h, w)), 4, stride[0]), 5, stride[1])
    size = tuple(_transposed_size(*a) for a in zip((h, w), (kh, kw), stride, padding, output_padding, dilation))
    out = None
    for i in range(kh):
        for j in range(kw):
            plane = _place(F.select(F.select(cols, 2, i), 2, j), 2, i * dilation[0] - padding[0], size[0])
            plane = plane if plane is None else _place(plane, 3, j * dilation[1] - padding[1], size[1])
            if plane is not None:
                out = plane if out is None else F.add(out, plane)
    if out is None:
        out = F.zeros((n, out_channels) + size, dtype=x.dtype, device=x.device)
    if bias is not None:
        out = F.add(out, F.reshape(bias, (out_channels, 1, 1)))
    return _unbatch(out, batched)


def _conv_transpose_reference(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The definition: every input pixel scatters weight * value onto the output, one pixel at a time."""
    stride, padding, output_padding, dilation = (_expand(v, 2) for v in (stride, padding, output_padding, dilation))
    batched = x.ndim == 4
    x = np.asarray(x, np.float64) if batched else np.asarray(x, np.float64)[None]
    weight = np.asarray(weight, np.float64)
    n, in_channels, h, w = x.shape
    in_group, out_group, kh, kw = in_channels // groups, weight.shape[1], weight.shape[2], weight.shape[3]
    size = [_transposed_size(*a) for a in zip((h, w), (kh, kw), stride, padding, output_padding, dilation)]
    out = np.zeros((n, out_group * groups, *size))
    for g in range(groups):
        xs = x[:, g * in_group:(g + 1) * in_group]
        ws = weight[g * in_group:(g + 1) * in_group]
        for y, z, i, j in np.ndindex(h, w, kh, kw):
            oy = y * stride[0] + i * dilation[0] - padding[0]
            oz = z * stride[1] + j * dilation[1] - padding[1]
            if 0 <= oy < size[0] and 0 <= oz < size[1]:
                out[:, g * out_group:(g + 1) * out_group, oy, oz] += xs[:, :, y, z] @ ws[:, :, i, j]
    if bias is not None:
        out += np.reshape(bias, (-1, 1, 1))
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


def _conv_transpose2d_input_derivative(grad, input, weight, stride, padding, dilation, groups):
    """conv2d of grad with the same weight; output_padding can leave it a window longer than the input
    (when it is not smaller than stride), which gets cropped."""
    pairs = tuple((p, p) for p in padding)
    out = F.conv2d(grad, weight, None, stride, pairs, dilation, groups)
    for dim, n in zip((-2, -1), input.shape[-2:]):
        if out.shape[dim] != n:
            out = F.slice(out, dim, 0, n)
    return out


def _conv_transpose2d_weight_derivative(grad, input, weight, stride, padding, dilation, groups):
    """conv2d's weight gradient with the roles swapped: grad's windows against the input."""
    pairs = tuple((p, p) for p in padding)
    return _conv2d_weight_grad(grad, input, tuple(weight.shape[2:]), stride, pairs, dilation, groups)


def _conv_transpose2d_onnx(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """output_padding becomes a smaller padding at the end (onnxruntime refuses output_padding >= stride, which
    PyTorch allows below the dilation); rows past every tap are zeros plus the bias, added after."""
    kernel = [int(k) for k in g.static(g.shape_of(weight)[2:], "kernel size")]
    ends = [max(p - e, 0) for p, e in zip(padding, output_padding)]
    extra = [max(e - p, 0) for p, e in zip(padding, output_padding)]

    def build(x):
        out = g.op("ConvTranspose", x, weight, None if any(extra) else bias, kernel_shape=kernel,
                   strides=list(stride), pads=list(padding) + ends, dilations=list(dilation), group=int(groups))
        if not any(extra):
            return out
        out = g.op("Pad", out, g.ints([0, 0, 0, 0, 0, 0] + extra), g.const(0, g.compute))
        return out if bias is None else g.op("Add", out, g.op("Reshape", bias, g.ints([-1, 1, 1])))
    return _onnx_batched(g, input, 2, build)


defop("conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, int[] padding=0, "
      "int[] output_padding=0, int groups=1, int[] dilation=1)", "nn", kind="composite", promotion=rules.same,
      derivative=_conv_derivative(_conv_transpose2d_input_derivative, _conv_transpose2d_weight_derivative),
      dtypes="float", meta=_conv_transpose_meta, normalize=_conv_transpose_normalize,
      composite=_conv_transpose2d, reference=_conv_transpose_reference, samples=_conv_transpose_samples,
      autocast="lower", onnx=_conv_transpose2d_onnx,
      method=False, tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="the gradient of conv2d with respect to its input ('deconvolution'); weight is "
          "(in_channels, out_channels / groups, kH, kW)")


# -- pooling ------------------------------------------------------------------------------------------------

def _pool_output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's rule: in ceil mode the last window must start inside the input or the left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_normalize(op, values):
    """kernel_size, stride (default: kernel_size), padding and dilation -> pairs; PyTorch's limits."""
    kernel = _at_least(op.name, "kernel_size", _ints(op.name, "kernel_size", values[1], 2), 1)
    stride = values[2] if values[2] else kernel
    values[1], values[2] = kernel, _at_least(op.name, "stride", _ints(op.name, "stride", stride, 2), 1)
    values[3] = _at_least(op.name, "padding", _ints(op.name, "padding", values[3], 2), 0)
    if "dilation" in op.param_index:
        values[4] = _at_least(op.name, "dilation", _ints(op.name, "dilation", values[4], 2), 1)
    if any(p > k // 2 for p, k in zip(values[3], kernel)):
        raise ValueError(f"{op.name}: padding should be at most half of the kernel size, got padding={values[3]} "
                         f"and kernel_size={kernel}")


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
    windows = _windows(x, kernel, stride, dilation)
    return F.slice(F.slice(windows, 2, 0, out[0]), 3, 0, out[1])


def _lowest(dtype) -> float:
    """The padding value max pooling can never pick: -inf, or an integer dtype's minimum."""
    if dtype.is_floating_point:
        return -math.inf
    return -(2 ** (8 * dtype.itemsize - 1)) if dtype.is_signed else 0


def _max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    x, batched = _batched(x, 2)
    windows = _pool_windows(x, kernel_size, stride, padding, dilation, ceil_mode, _lowest(x.dtype))
    return _unbatch(F.amax(windows, (-2, -1)), batched)


def _pool_counts(size: int, k: int, s: int, p: int, out: int, include_pad: bool, device):
    """How many elements each window averages: clipped to the padded input, or to the input itself."""
    start = F.sub(F.mul(F.arange(out, device=device), s), p)
    end = F.minimum(F.add(start, k), size + p)
    if not include_pad:
        start, end = F.maximum(start, 0), F.minimum(end, size)
    return F.sub(end, start)


def _avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, batched = _batched(x, 2)
    windows = _pool_windows(x, kernel_size, stride, padding, (1, 1), ceil_mode, 0.0)
    total = F.sum(windows, (-2, -1))
    if divisor_override is not None:
        return _unbatch(F.div(total, divisor_override), batched)
    rows, cols = (_pool_counts(*a, count_include_pad, x.device)
                  for a in zip(x.shape[-2:], kernel_size, stride, padding, total.shape[-2:]))
    return _unbatch(F.div(total, F.mul(F.unsqueeze(rows, 1), cols)), batched)


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
    kernel = _expand(kernel_size, 2)
    stride = _expand(stride, 2) if stride not in (None, [], ()) else kernel
    padding, dilation = _expand(padding, 2), _expand(dilation, 2)
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
        return _onnx_batched(g, input, 2, lambda x: g.op(
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

def _backward_normalize(forward_normalize):
    """The forward's normalizer applied to the attributes after the leading grad_output."""
    def normalize(op, values):
        rest = values[1:]
        forward_normalize(op, rest)
        values[1:] = rest
    return normalize


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
    x, batched = _batched(input, 2)
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
    plane = F.reshape(F.scatter_add(plane, 2, index, F.reshape(grad, (n, c, oh * ow))), (n, c, height, width))
    plane = F.slice(F.slice(plane, 2, padding[0], padding[0] + h), 3, padding[1], padding[1] + w)
    return _unbatch(plane, batched)


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
      normalize=_backward_normalize(_pool_normalize), composite=_max_pool2d_backward,
      reference=_max_pool_backward_reference, samples=_max_pool_backward_samples, method=False,
      doc="the gradient of max_pool2d with respect to its input: each window's gradient to its first maximum")


def _avg_pool_normalize(op, values):
    _pool_normalize(op, values)
    if values[6] is not None and values[6] == 0:
        raise ValueError("avg_pool2d: divisor_override must not be zero")


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
    return _onnx_batched(g, input, 2, build)


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
      normalize=_backward_normalize(_avg_pool_normalize), composite=_avg_pool2d_backward,
      reference=_avg_pool_backward_reference, samples=_pool_backward_samples(_avg_pool_samples, _avg_pool_reference),
      method=False, doc="the gradient of avg_pool2d with respect to its input: each output's gradient spread "
                        "over its window by the forward's divisor")


# -- adaptive average pooling ---------------------------------------------------------------------------------

def _bins(size: int, out: int) -> list:
    """PyTorch's adaptive bins: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_normalize(op, values):
    x, output_size = values
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,)
    if len(sizes) == 1:
        sizes = tuple(sizes) * 2
    if len(sizes) != 2:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be an int or a pair, got {output_size!r}")
    spatial = shape(x)[-2:]
    resolved = []
    for i, s in enumerate(sizes):
        if s is None:
            s = spatial[i] if len(spatial) == 2 else 0
        s = _ints(op.name, "output_size", s, 1)[0]
        if s < 0:
            raise ValueError(f"adaptive_avg_pool2d: output_size must be non-negative, got {output_size!r}")
        resolved.append(s)
    values[1] = tuple(resolved)


def _adaptive_meta(x, output_size):
    in_shape = shape(x)
    require(len(in_shape) in (3, 4) and all(in_shape[-3:]), "adaptive_avg_pool2d",
            "expected a 3-D (C, H, W) or 4-D (N, C, H, W) input with non-zero channels and spatial sizes", x)
    return in_shape[:-2] + tuple(output_size)


def _adaptive_mean(x, dim: int, out: int):
    size = x.shape[dim]
    if size == out:
        return x
    if size % out == 0:
        split = x.shape[:dim] + (out, size // out) + x.shape[dim + 1:]
        return F.mean(F.reshape(x, split), dim + 1)
    return F.cat([F.mean(F.slice(x, dim, a, b), dim, True) for a, b in _bins(size, out)], dim)


def _adaptive_avg_pool2d(x, output_size):
    """Bins are rectangles, so averaging rows then columns gives each bin's mean."""
    if 0 in output_size:
        return F.zeros(tuple(x.shape[:-2]) + output_size, dtype=x.dtype, device=x.device)
    return _adaptive_mean(_adaptive_mean(x, x.ndim - 2, output_size[0]), x.ndim - 1, output_size[1])


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
    """Rows, then columns: the forward's two separable means, adjoined in turn."""
    if 0 in output_size:
        return F.zeros_like(input)
    h, w = input.shape[-2:]
    return _adaptive_mean_backward(_adaptive_mean_backward(grad, grad.ndim - 1, w), grad.ndim - 2, h)


def _adaptive_reference(x, output_size):
    sizes = _expand(output_size, 2)
    h, w = x.shape[-2:]
    sizes = (h if sizes[0] is None else sizes[0], w if sizes[1] is None else sizes[1])
    out = np.zeros(x.shape[:-2] + sizes)
    for i, (a, b) in enumerate(_bins(h, sizes[0])):
        for j, (c, d) in enumerate(_bins(w, sizes[1])):
            out[..., i, j] = np.mean(np.asarray(x, np.float64)[..., a:b, c:d], axis=(-2, -1))
    return out


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
        return _onnx_batched(g, input, 2, lambda x: g.op("GlobalAveragePool", x))
    if not all(o and n % o == 0 for n, o in zip(size, output_size)):
        g.fail(f"output_size {tuple(output_size)} does not divide the input size {tuple(size)}: PyTorch's uneven "
               f"bins have no ONNX form")
    kernel = [n // o for n, o in zip(size, output_size)]
    return _onnx_batched(g, input, 2, lambda x: g.op("AveragePool", x, kernel_shape=kernel, strides=kernel))


defop("adaptive_avg_pool2d(Tensor input, Any output_size)", "nn", kind="composite", promotion=rules.same,
      dtypes="float", meta=_adaptive_meta, normalize=_adaptive_normalize, composite=_adaptive_avg_pool2d,
      derivative={"input": _adaptive_derivative},
      reference=_adaptive_reference, samples=_adaptive_samples, method=False,
      onnx=_adaptive_avg_pool2d_onnx,
      doc="average pooling to a fixed output size (an int, or a pair whose None keeps the input size)")


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


# -- one_hot --------------------------------------------------------------------------------------------------

def _one_hot_normalize(op, values):
    """Resolves num_classes=-1 and checks the class values: this reads the data, as PyTorch does."""
    note_value_read()
    x, num_classes = values
    if num_classes < -1:
        raise ValueError(f"one_hot: num_classes must be -1 or non-negative, got {num_classes}")
    if x.numel() == 0:
        if num_classes == -1:
            raise ValueError("one_hot: cannot infer the number of classes from an empty tensor; pass num_classes")
        return
    low, high = F.amin(x).item(), F.amax(x).item()
    if low < 0:
        raise ValueError(f"one_hot: class values must be non-negative, got {low}")
    if num_classes == -1:
        values[1] = high + 1
    elif high >= num_classes:
        raise ValueError(f"one_hot: class values must be smaller than num_classes={num_classes}, got {high}")


def _one_hot(x, num_classes=-1):
    return F.to_dtype(F.eq(F.unsqueeze(x, -1), F.arange(num_classes, device=x.device)), int64)


def _one_hot_reference(x, num_classes=-1):
    if num_classes == -1:
        num_classes = int(np.max(x)) + 1
    return (np.asarray(x)[..., None] == np.arange(num_classes)).astype(np.int64)


def _one_hot_samples(make, dtype):
    yield Sample((make((6,), low=0, high=4),))
    yield Sample((make((2, 3), low=0, high=5), 7))
    yield Sample((make((), low=0, high=3), 3), note="0-d")
    yield Sample((make((0,), low=0, high=3), 3), note="empty")


def _one_hot_onnx(g, tensor, num_classes):
    """OneHot with int64 values 0 and 1 (a 0-d index as a vector of one: OneHot needs rank 1)."""
    indices = index_as_int64(g, tensor)
    scalar = not g.shape_of(tensor)
    if scalar:
        indices = g.unsqueeze(indices, [0])
    out = g.op("OneHot", indices, g.const(num_classes, int64), g.const([0, 1], int64), axis=-1)
    return g.squeeze(out, [0]) if scalar else out


defop("one_hot(Index tensor, int num_classes=-1)", "nn", kind="composite",
      promotion=lambda rt, op, values: (rt, int64), dtypes="int",
      meta=lambda x, num_classes=-1: shape(x) + (num_classes,), normalize=_one_hot_normalize,
      composite=_one_hot, reference=_one_hot_reference, samples=_one_hot_samples, method=False,
      differentiable=False, onnx=_one_hot_onnx,
      doc="int64 indicators with a new last dim; num_classes=-1 means max + 1")


# -- activations ------------------------------------------------------------------------------------------------

def _activation(signature: str, composite, reference, dtypes="float", **fields):
    return defop(signature, "nn", kind="composite", promotion=rules.same, dtypes=dtypes,
                 meta=lambda x, *attrs: shape(x), composite=in_opmath(composite), reference=reference,
                 samples=fields.pop("samples", _activation_samples), method=fields.pop("method", False), **fields)


def _activation_samples(make, dtype):
    low, high = (-8, 8) if dtype.is_floating_point else (-20, 20)
    yield Sample((make((4, 5), low=low, high=high),))
    yield Sample((make((2, 3, 4), low=low, high=high, noncontiguous=True),))
    yield Sample((make(()),), note="0-d")
    yield Sample((make((0, 3)),), note="empty")


def _with_attrs(*samples):
    """Samples that also pass attributes, after the plain ones."""
    def generate(make, dtype):
        yield from _activation_samples(make, dtype)
        for args, kwargs in samples:
            yield Sample((make((3, 7), low=-30, high=30),) + args, kwargs)
    return generate


def _leaky_relu(x, negative_slope=0.01):
    return F.where(F.gt(x, 0), x, F.mul(x, negative_slope))


def _elu(x, alpha=1.0):
    # expm1 sees only the non-positive part, so the unused branch cannot overflow (nor its gradient)
    return F.where(F.gt(x, 0), x, F.mul(F.expm1(F.minimum(x, 0)), alpha))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_check(op, values):
    if values[1] not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {values[1]!r}")


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        inner = F.mul(F.add(x, F.mul(F.mul(F.mul(x, x), x), 0.044715)), _SQRT_2_OVER_PI)
        return F.mul(F.mul(x, 0.5), F.add(F.tanh(inner), 1))
    return F.mul(F.mul(x, 0.5), F.add(F.erf(F.mul(x, 1 / math.sqrt(2.0))), 1))


def _gelu_reference(x, approximate="none"):
    x = np.asarray(x, np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2.0)))


def _softplus(x, beta=1.0, threshold=20.0):
    scaled = F.mul(x, beta)
    # log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)): exp never overflows, even in float16
    soft = F.add(F.maximum(scaled, 0), F.log1p(F.exp(F.neg(F.abs(scaled)))))
    return F.where(F.gt(scaled, threshold), x, F.div(soft, beta))


def _gelu_formula(approximate):
    if approximate == "tanh":
        return f"input * 0.5 * (tanh((input + input * input * input * 0.044715) * {_SQRT_2_OVER_PI!r}) + 1)"
    return f"input * 0.5 * (erf(input * {1 / math.sqrt(2.0)!r}) + 1)"


def _softplus_formula(beta, threshold):
    """max(z, 0) + log1p(exp(-|z|)) for z = beta * x, with the log1p term masked off above a non-negative
    threshold (where it is tiny and the result is z / beta), as the CPU kernel computes it."""
    soft = "max(input * beta, 0) + log1p(exp(-abs(input * beta)))"
    if threshold < 0:
        return f"where(input * beta > threshold, input, ({soft}) / beta)"
    return "(max(input * beta, 0) + log1p(exp(-abs(input * beta))) * (input * beta <= threshold)) / beta"


def _softplus_reference(x, beta=1.0, threshold=20.0):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _hardtanh_check(op, values):
    if values[1] > values[2]:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val, got {values[1]} > {values[2]}")


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    if not x.dtype.is_floating_point:  # integer tensors stay integer; limits outside the dtype's range clip
        bits = 8 * x.dtype.itemsize
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if x.dtype.is_signed else (0, 2 ** bits - 1)
        min_val, max_val = (min(max(int(v), low), high) for v in (min_val, max_val))
    # where rather than clamp: PyTorch's gradient is zero at the limits themselves, clamp's passes there
    return F.where(F.le(x, min_val), min_val, F.where(F.ge(x, max_val), max_val, x))


def _logsigmoid(x):
    # log(1 / (1 + exp(-x))) = min(x, 0) - log1p(exp(-|x|)), finite for every x
    return F.sub(F.minimum(x, 0), F.log1p(F.exp(F.neg(F.abs(x)))))


def _sigmoid_reference(x):
    return 1 / (1 + np.exp(-np.asarray(x, np.float64)))


# -- ONNX lowerings of the activations ------------------------------------------------------------------------

def _number(g, value):
    """A 0-d constant in the call's compute dtype."""
    return g.const(value, g.compute)


def _leaky_relu_onnx(g, input, negative_slope):
    return g.op("LeakyRelu", input, alpha=float(negative_slope))


def _elu_onnx(g, input, alpha):
    return g.op("Elu", input, alpha=float(alpha))


def _gelu_onnx(g, input, approximate):
    """ONNX Gelu from opset 20; before it the same formula as the composite, with Erf or Tanh."""
    if g.opset >= 20:
        return g.op("Gelu", input, approximate=approximate)
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", input, input), input)
        inner = g.op("Mul", g.op("Add", input, g.op("Mul", cube, _number(g, 0.044715))), _number(g, _SQRT_2_OVER_PI))
        curve = g.op("Tanh", inner)
    else:
        curve = g.op("Erf", g.op("Mul", input, _number(g, 1 / math.sqrt(2.0))))
    return g.op("Mul", g.op("Mul", input, _number(g, 0.5)), g.op("Add", curve, _number(g, 1.0)))


def _silu_onnx(g, input):
    return g.op("Mul", input, g.op("Sigmoid", input))


def _mish_onnx(g, input):
    if g.opset >= 18:
        return g.op("Mish", input)
    return g.op("Mul", input, g.op("Tanh", g.op("Softplus", input)))


def _softplus_onnx(g, input, beta, threshold):
    scaled = input if beta == 1 else g.op("Mul", input, _number(g, beta))
    soft = g.op("Softplus", scaled)
    if beta != 1:
        soft = g.op("Div", soft, _number(g, beta))
    return g.op("Where", g.op("Greater", scaled, _number(g, threshold)), input, soft)


def _hardtanh_onnx(g, input, min_val, max_val):
    """Clip; integer inputs clip at the limits truncated to the dtype's range, as the composite does."""
    if not g.compute.is_floating_point:
        bits = 8 * g.compute.itemsize
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if g.compute.is_signed else (0, 2 ** bits - 1)
        min_val, max_val = (min(max(int(v), low), high) for v in (min_val, max_val))
    return g.op("Clip", input, _number(g, min_val), _number(g, max_val))


def _logsigmoid_onnx(g, input):
    return g.op("Neg", g.op("Softplus", g.op("Neg", input)))


_activation("relu(Tensor input)", lambda x: F.where(F.le(x, 0), 0, x), lambda x: np.maximum(x, 0),
            dtypes="numeric", method=True, inplace=True, doc="max(x, 0); NaN stays NaN; relu'(0) = 0",
            scalar="max(input, 0)", onnx="Relu",
            derivative=lambda grad, result: F.threshold_backward(grad, result, 0.0))


def _threshold_backward_meta(grad_output, input, threshold):
    require(shape(grad_output) == shape(input), "threshold_backward",
            "grad_output and input must have one shape", grad_output, input)
    return shape(input)


def _threshold_backward_samples(make, dtype):
    yield Sample((make((4, 5)), make((4, 5), low=-2, high=2), 0.0))
    yield Sample((make((2, 3, 4), noncontiguous=True), make((2, 3, 4), low=-2, high=2, noncontiguous=True), 0.5))
    yield Sample((make(()), make(()), -1.0), note="0-d")
    yield Sample((make((0, 3)), make((0, 3)), 0.0), note="empty")


defop("threshold_backward(Tensor grad_output, Tensor input, float threshold)", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_threshold_backward_meta,
      composite=lambda grad_output, input, threshold: F.mul(grad_output, F.gt(input, threshold)),
      reference=lambda grad_output, x, threshold: np.where(np.asarray(x) > threshold, grad_output, 0.0),
      samples=_threshold_backward_samples, method=False, scalar="grad_output * (input > threshold)",
      doc="grad_output where input > threshold, else 0: relu's gradient (threshold 0, input its result) in one "
          "op instead of a comparison, a cast and a product")
_activation("leaky_relu(Tensor input, float negative_slope=0.01)", _leaky_relu,
            lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
            samples=_with_attrs(((0.2,), {}), ((), {"negative_slope": -1.5})), doc="x if x > 0 else x * slope",
            onnx=_leaky_relu_onnx,
            scalar="where(input > 0, input, input * negative_slope)")
_activation("elu(Tensor input, float alpha=1.0)", _elu,
            lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
            samples=_with_attrs(((0.5,), {}), ((), {"alpha": 2.0})), doc="x if x > 0 else alpha * (exp(x) - 1)",
            onnx=_elu_onnx,
            scalar="max(input, 0) + expm1(min(input, 0)) * alpha")
_activation("gelu(Tensor input, *, str approximate='none')", _gelu, _gelu_reference, normalize=_gelu_check,
            samples=_with_attrs(((), {"approximate": "tanh"})), scalar=_gelu_formula, onnx=_gelu_onnx,
            doc="x * Phi(x) with the normal CDF via erf, or its tanh approximation")
_activation("silu(Tensor input)", lambda x: F.mul(x, F.sigmoid(x)), lambda x: x * _sigmoid_reference(x),
            doc="x * sigmoid(x) (swish)", scalar="input / (1 + exp(-input))", onnx=_silu_onnx)
_activation("mish(Tensor input)", lambda x: F.mul(x, F.tanh(F.softplus(x))),
            lambda x: x * np.tanh(_softplus_reference(x)), doc="x * tanh(softplus(x))", onnx=_mish_onnx,
            scalar="input * tanh(max(input, 0) + log1p(exp(-abs(input))) * (input <= 20))")
_activation("softplus(Tensor input, float beta=1.0, float threshold=20.0)", _softplus, _softplus_reference,
            samples=_with_attrs(((2.0,), {}), ((0.5, 5.0), {})), autocast=FLOAT32_ON_CUDA, scalar=_softplus_formula,
            onnx=_softplus_onnx,
            doc="log(1 + exp(beta * x)) / beta, the identity where beta * x > threshold")
_activation("hardtanh(Tensor input, float min_val=-1.0, float max_val=1.0)", _hardtanh,
            lambda x, min_val=-1.0, max_val=1.0: np.clip(np.asarray(x, np.float64), min_val, max_val),
            dtypes="numeric", normalize=_hardtanh_check, samples=_with_attrs(((-2.0, 3.0), {})), onnx=_hardtanh_onnx,
            doc="x clamped to [min_val, max_val]")
_activation("logsigmoid(Tensor input)", _logsigmoid,
            lambda x: -_softplus_reference(-np.asarray(x, np.float64), 1.0, np.inf),
            doc="log(sigmoid(x)), stable for large |x|", scalar="min(input, 0) - log1p(exp(-abs(input)))",
            onnx=_logsigmoid_onnx)
