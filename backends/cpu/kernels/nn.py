"""NumPy overrides of the heavy nn composites: im2col convolution, tap-loop pooling, fused softmax, np.pad.

They receive normalized attributes (pairs per spatial dim; conv padding as ((before, after), ...)).
Half-precision inputs compute in float32 and are rounded once at the end.
"""
from __future__ import annotations

import functools

import numpy as np

from ..dtypes import LOW_PRECISION

_windows_of = np.lib.stride_tricks.sliding_window_view


def _in_float32(kernel):
    """Run a kernel on float32 copies of float16/bfloat16 arrays and round its result back."""
    @functools.wraps(kernel)
    def wrapper(a, *args):
        if a.dtype not in LOW_PRECISION:
            return kernel(a, *args)
        low = a.dtype
        args = [x.astype(np.float32) if isinstance(x, np.ndarray) else x for x in args]
        return kernel(a.astype(np.float32), *args).astype(low)
    return wrapper


def _batched(a, spatial: int):
    return (a, True) if a.ndim == spatial + 2 else (a[None], False)


# -- convolution --------------------------------------------------------------------------------------

@_in_float32
def _conv2d(x, w, bias, stride, padding, dilation, groups):
    """im2col over a window view: one copy into columns, then a BLAS matmul per image and group."""
    x, batched = _batched(x, 2)
    if any(p for pair in padding for p in pair):
        x = np.pad(x, ((0, 0), (0, 0)) + tuple(padding))
    out_channels, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    windows = _windows_of(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    n, _, oh, ow = windows.shape[:4]
    depth = w.size // out_channels
    cols = windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, groups, depth, oh * ow)
    taps = w.reshape(groups, out_channels // groups, depth)
    if groups == 1:  # a plain 2-D @ 3-D matmul is a third faster in NumPy than the broadcast 4-D one
        taps, cols = taps[0], cols[:, 0]
    out = np.matmul(taps, cols).reshape(n, out_channels, oh, ow)
    if bias is not None:
        out += bias.reshape(-1, 1, 1)
    return out if batched else out[0]


def _conv1d(x, w, bias, stride, padding, dilation, groups):
    out = _conv2d(x[..., None, :], w[:, :, None, :], bias, (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                  (1,) + tuple(dilation), groups)
    return out[..., 0, :]


@_in_float32
def _conv_transpose2d(x, w, bias, stride, padding, output_padding, groups, dilation):
    """Columns = weight^T @ input; col2im adds each kernel tap's plane, strided, onto a canvas."""
    x, batched = _batched(x, 2)
    n, in_channels, h, wd = x.shape
    _, out_group, kh, kw = w.shape
    out_channels = out_group * groups
    taps = w.reshape(groups, in_channels // groups, out_group * kh * kw).transpose(0, 2, 1)
    cols = np.matmul(taps, x.reshape(n, groups, in_channels // groups, h * wd)).reshape(n, out_channels, kh, kw,
                                                                                         h, wd)
    size = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1
            for i, k, s, p, e, d in zip((h, wd), (kh, kw), stride, padding, output_padding, dilation)]
    spans = [(i - 1) * s + 1 for i, s in zip((h, wd), stride)]
    canvas = np.zeros((n, out_channels) + tuple(max(d * (k - 1) + span, p + o) for d, k, span, p, o in
                                                zip(dilation, (kh, kw), spans, padding, size)), cols.dtype)
    for i in range(kh):
        rows = slice(i * dilation[0], i * dilation[0] + spans[0], stride[0])
        for j in range(kw):
            canvas[:, :, rows, j * dilation[1]:j * dilation[1] + spans[1]:stride[1]] += cols[:, :, i, j]
    out = canvas[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
    if bias is not None:
        out = out + bias.reshape(-1, 1, 1)
    return np.ascontiguousarray(out if batched else out[0])


# -- pooling ------------------------------------------------------------------------------------------

def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size; in ceil mode the last window must start inside input or left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def _pool_taps(x, kernel, stride, padding, dilation, ceil_mode, fill):
    """The output size and a generator of one strided (N, C, OH, OW) view per kernel tap."""
    h, w = x.shape[-2:]
    out = [_pool_size(*a, ceil_mode) for a in zip((h, w), kernel, stride, padding, dilation)]
    right = [max(0, (o - 1) * s + d * (k - 1) + 1 - size - p)
             for o, s, d, k, size, p in zip(out, stride, dilation, kernel, (h, w), padding)]
    if any(padding) or any(right):
        x = np.pad(x, ((0, 0), (0, 0), (padding[0], right[0]), (padding[1], right[1])), constant_values=fill)

    def taps():
        for i in range(kernel[0]):
            r = i * dilation[0]
            for j in range(kernel[1]):
                c = j * dilation[1]
                yield x[:, :, r:r + (out[0] - 1) * stride[0] + 1:stride[0], c:c + (out[1] - 1) * stride[1] + 1:stride[1]]
    return out, taps()


def _max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    x, batched = _batched(x, 2)
    fill = -np.inf if x.dtype.kind == "f" or x.dtype in LOW_PRECISION else np.iinfo(x.dtype).min
    _, taps = _pool_taps(x, kernel_size, stride, padding, dilation, ceil_mode, fill)
    out = np.array(next(taps))
    for tap in taps:
        np.maximum(out, tap, out=out)  # NaN propagates, as in PyTorch
    return out if batched else out[0]


def _counts(size, k, s, p, out, include_pad):
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if not include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


@_in_float32
def _avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, batched = _batched(x, 2)
    out_size, taps = _pool_taps(x, kernel_size, stride, padding, (1, 1), ceil_mode, 0)
    total = np.array(next(taps))
    for tap in taps:
        total += tap
    if divisor_override is not None:
        divisor = divisor_override
    else:
        rows, cols = (_counts(*a, count_include_pad) for a in zip(x.shape[-2:], kernel_size, stride, padding,
                                                                   out_size))
        divisor = np.outer(rows, cols).astype(x.dtype)
    total /= divisor
    return total if batched else total[0]


def _adaptive_mean(x, axis: int, out: int):
    size = x.shape[axis]
    if size == out:
        return x
    if size % out == 0:
        return x.reshape(x.shape[:axis] + (out, size // out) + x.shape[axis + 1:]).mean(axis=axis + 1)
    bins = [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]
    index = (slice(None),) * axis
    return np.stack([x[index + (slice(a, b),)].mean(axis=axis) for a, b in bins], axis=axis)


@_in_float32
def _adaptive_avg_pool2d(x, output_size):
    if 0 in output_size:
        return np.zeros(x.shape[:-2] + tuple(output_size), x.dtype)
    out = _adaptive_mean(_adaptive_mean(x, x.ndim - 2, output_size[0]), x.ndim - 1, output_size[1])
    return np.array(out, dtype=x.dtype)


# -- softmax and padding ------------------------------------------------------------------------------

def _softmax_core(a, dim, log: bool):
    if a.ndim == 0:
        return np.zeros_like(a) if log else np.ones_like(a)
    if a.size == 0:
        return a.copy()
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # inf - inf gives NaN, as in PyTorch
        shifted = a - np.max(a, axis=dim, keepdims=True)
        e = np.exp(shifted)
        total = np.sum(e, axis=dim, keepdims=True)
        if log:
            shifted -= np.log(total)
            return shifted
        e /= total
        return e


@_in_float32
def _softmax(a, dim, dtype=None):
    return _softmax_core(a, dim, log=False)


@_in_float32
def _log_softmax(a, dim, dtype=None):
    return _softmax_core(a, dim, log=True)


_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad(a, pad, mode, value):
    """np.pad for the growing part; negative padding crops (circular crops before wrapping, like PyTorch)."""
    pairs = [(0, 0)] * a.ndim
    for k in range(len(pad) // 2):
        pairs[a.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    crop = tuple(slice(max(-b, 0), a.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(pairs))
    grow = [(max(b, 0), max(e, 0)) for b, e in pairs]
    if mode == "constant" or mode == "circular":
        a = a[crop]
        crop = None
    if mode == "constant":
        out = np.pad(a, grow, constant_values=0 if value is None else value)
    else:
        out = np.pad(a, grow, mode=_NUMPY_MODES[mode])
    if crop is not None:
        out = out[tuple(slice(s.start, s.stop + g[0] + g[1]) for s, g in zip(crop, grow))]
    return np.ascontiguousarray(out)


KERNELS = {
    "conv1d": _conv1d,
    "conv2d": _conv2d,
    "conv_transpose2d": _conv_transpose2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "pad": _pad,
}
