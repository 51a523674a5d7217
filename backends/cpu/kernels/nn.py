"""NumPy overrides of the nn composites: im2col convolution, tap-loop pooling, fused softmax and activations.

They receive normalized attributes (pairs per spatial dim; conv padding as ((before, after), ...)).
Half-precision inputs compute in float32 and are rounded once at the end.
"""
from __future__ import annotations

import functools

import numpy as np
from scipy import special

from ..dtypes import LOW_PRECISION

_windows_of = np.lib.stride_tricks.sliding_window_view


def _in_float32(kernel):
    """Run a kernel on float32 copies of float16/bfloat16 arrays and round its result back; NumPy
    scalars (what ufuncs give for 0-d input) become 0-d arrays. inf - inf and 0 * inf give NaN as in
    PyTorch, without NumPy's warnings."""
    @functools.wraps(kernel)
    def wrapper(a, *args):
        with np.errstate(all="ignore"):
            if a.dtype not in LOW_PRECISION:
                return np.asarray(kernel(a, *args))
            low = a.dtype
            args = [x.astype(np.float32) if isinstance(x, np.ndarray) else x for x in args]
            return np.asarray(kernel(a.astype(np.float32), *args)).astype(low)
    return wrapper


def _batched(a, spatial: int):
    return (a, True) if a.ndim == spatial + 2 else (a[None], False)


# -- convolution --------------------------------------------------------------------------------------

@_in_float32
def _conv2d(x, w, bias, stride, padding, dilation, groups):
    x, batched = _batched(x, 2)
    conv = _conv_runs if tuple(stride) == (1, 1) else _conv_windows
    out = conv(x, w, bias, stride, padding, dilation, groups)
    return out if batched else out[0]


def _product(w, cols, bias, groups: int):
    """weight @ columns per group, as an (out_channels, columns) matrix; the bias is added along its long
    rows, which NumPy does much faster than along the short rows of the final (N, C, H, W) layout."""
    out_channels = w.shape[0]
    out = np.matmul(w.reshape(groups, out_channels // groups, cols.shape[1]), cols).reshape(out_channels, -1)
    if bias is not None:
        out += bias[:, None]
    return out


def _conv_runs(x, w, bias, stride, padding, dilation, groups):
    """Stride 1: computing every output row at the padded width makes each tap's input one contiguous run
    of the flattened plane, so im2col copies long runs; one BLAS matmul per group covers the whole batch.
    The dw * (kw - 1) extra columns per row are computed and dropped (cheaper than a scattered copy)."""
    n, c, h, wd = x.shape
    (top, bottom), (left, right) = padding
    hp, wp = h + top + bottom, wd + left + right
    out_channels, group_channels, kh, kw = w.shape
    (dh, dw) = dilation
    oh, ow = hp - dh * (kh - 1), wp - dw * (kw - 1)
    flat = np.zeros((n, c, hp * wp + dw * (kw - 1)), x.dtype)  # the tail keeps the last tap's run in bounds
    plane = flat[:, :, :hp * wp]
    plane.shape = (n, c, hp, wp)  # a view (setting .shape never copies)
    plane[:, :, top:top + h, left:left + wd] = x
    _, sc, sl = flat.strides
    runs = np.lib.stride_tricks.as_strided(
        flat, (groups, group_channels, kh, kw, n, oh * wp),
        (group_channels * sc, sc, dh * wp * sl, dw * sl, flat.strides[0], sl), writeable=False)
    cols = runs.reshape(groups, group_channels * kh * kw, n * oh * wp)
    out = _product(w, cols, bias, groups).reshape(out_channels, n, oh, wp)
    return np.ascontiguousarray(out[..., :ow].transpose(1, 0, 2, 3))


def _conv_windows(x, w, bias, stride, padding, dilation, groups):
    """Strided: im2col over a sliding-window view (no wasted columns), batch inside the columns so that
    BLAS sees one big product per group."""
    if any(p for pair in padding for p in pair):
        x = _grow(x, ((0, 0), (0, 0)) + tuple(padding), "constant", 0)
    out_channels, group_channels, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    windows = _windows_of(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    n, _, oh, ow = windows.shape[:4]
    depth = group_channels * kh * kw
    cols = windows.transpose(1, 4, 5, 0, 2, 3).reshape(groups, depth, n * oh * ow)
    out = _product(w, cols, bias, groups).reshape(out_channels, n, oh, ow)
    return np.ascontiguousarray(out.transpose(1, 0, 2, 3))


def _conv1d(x, w, bias, stride, padding, dilation, groups):
    out = _conv2d(x[..., None, :], w[:, :, None, :], bias, (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                  (1,) + tuple(dilation), groups)
    return out[..., 0, :]


@_in_float32
def _conv_transpose2d(x, w, bias, stride, padding, output_padding, groups, dilation):
    """One matmul per group gives every tap's contribution (batch inside the columns, so BLAS sees one big
    product); col2im then adds each tap's plane, strided, onto a zero canvas. The batch is the canvas's last
    dim, so that each add runs over rows of width x batch contiguous elements, not of the image width alone
    (which for small feature maps left NumPy a few elements per inner loop)."""
    x, batched = _batched(x, 2)
    n, in_channels, h, wd = x.shape
    _, out_group, kh, kw = w.shape
    out_channels, in_group = out_group * groups, in_channels // groups
    taps = w.reshape(groups, in_group, out_group, kh, kw).transpose(0, 3, 4, 2, 1)
    taps = taps.reshape(groups, kh * kw * out_group, in_group)
    inputs = np.ascontiguousarray(x.transpose(1, 2, 3, 0)).reshape(groups, in_group, h * wd * n)
    cols = np.matmul(taps, inputs).reshape(groups, kh, kw, out_group, h, wd, n)
    size = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1
            for i, k, s, p, e, d in zip((h, wd), (kh, kw), stride, padding, output_padding, dilation)]
    spans = [(i - 1) * s + 1 for i, s in zip((h, wd), stride)]
    extent = tuple(max(d * (k - 1) + span, p + o) for d, k, span, p, o in zip(dilation, (kh, kw), spans, padding, size))
    canvas = np.zeros((groups, out_group) + extent + (n,), cols.dtype)
    for i in range(kh):
        rows = slice(i * dilation[0], i * dilation[0] + spans[0], stride[0])
        for j in range(kw):
            canvas[:, :, rows, j * dilation[1]:j * dilation[1] + spans[1]:stride[1]] += cols[:, i, j]
    out = canvas[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
    out = np.ascontiguousarray(out.reshape(out_channels, size[0], size[1], n).transpose(3, 0, 1, 2))
    if bias is not None:
        out += bias.reshape(-1, 1, 1)
    return out if batched else out[0]


# -- pooling ------------------------------------------------------------------------------------------

def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size; in ceil mode the last window must start inside input or left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def _pool_extent(size, kernel, stride, padding, dilation, ceil_mode):
    """(output size, extra padding on the right that ceil mode's last window reaches) per spatial dim."""
    out = [_pool_size(*a, ceil_mode) for a in zip(size, kernel, stride, padding, dilation)]
    right = [max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
             for o, s, d, k, n, p in zip(out, stride, dilation, kernel, size, padding)]
    return out, right


def _tap_views(plane, out, kernel, stride, dilation):
    """One strided (N, C, OH, OW) view of a padded plane per kernel tap, row by row: what each window
    reads (or, in a backward, where each window's gradient goes) at that tap."""
    (oh, ow), (sh, sw) = out, stride
    for i in range(kernel[0]):
        r = i * dilation[0]
        for j in range(kernel[1]):
            c = j * dilation[1]
            yield plane[:, :, r:r + (oh - 1) * sh + 1:sh, c:c + (ow - 1) * sw + 1:sw]


def _pool_taps(x, kernel, stride, padding, dilation, ceil_mode, fill):
    """The output size and a generator of one strided (N, C, OH, OW) view per kernel tap."""
    out, right = _pool_extent(x.shape[-2:], kernel, stride, padding, dilation, ceil_mode)
    if any(padding) or any(right):
        x = _grow(x, ((0, 0), (0, 0), (padding[0], right[0]), (padding[1], right[1])), "constant", fill)
    return out, _tap_views(x, out, kernel, stride, dilation)


def _pool_canvas(x, kernel, stride, padding, dilation, ceil_mode, dtype):
    """A zero padded plane for a pooling gradient, and the slice of it that is the input."""
    n, c, h, w = x.shape
    _, right = _pool_extent((h, w), kernel, stride, padding, dilation, ceil_mode)
    canvas = np.zeros((n, c, h + padding[0] + right[0], w + padding[1] + right[1]), dtype)
    return canvas, canvas[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]


def _disjoint(kernel, stride, dilation) -> bool:
    """Whether no two windows share an element, so that each gradient lands on its own spot."""
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))


def _max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    x, batched = _batched(x, 2)
    fill = -np.inf if x.dtype.kind == "f" or x.dtype in LOW_PRECISION else np.iinfo(x.dtype).min
    _, taps = _pool_taps(x, kernel_size, stride, padding, dilation, ceil_mode, fill)
    out = np.array(next(taps))
    for tap in taps:
        np.maximum(out, tap, out=out)  # NaN propagates, as in PyTorch
    return out if batched else out[0]


@_in_float32
def _max_pool2d_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode):
    """PyTorch's choice in each window: its first element inside the input, replaced by every later one that
    is larger or NaN. One pass per tap finds it for all windows at once, one more routes the gradient.
    Branch-free updates throughout: a masked copy (copyto with where=) costs several times more."""
    x, batched = _batched(x, 2)
    grad = grad if batched else grad[None]
    h, w = x.shape[-2:]
    out, right = _pool_extent((h, w), kernel_size, stride, padding, dilation, ceil_mode)
    canvas = _grow(x, ((0, 0), (0, 0), (padding[0], right[0]), (padding[1], right[1])), "constant", -np.inf)
    kernel_cols = kernel_size[1]
    index = np.int16 if kernel_size[0] * kernel_cols < 2 ** 15 else np.int64
    # the first tap inside the input, in each window (not 0 where the window starts in the padding)
    first = [np.maximum(0, -((np.arange(o) * s - p) // d)) for o, s, p, d in zip(out, stride, padding, dilation)]
    chosen, best = np.empty(grad.shape, index), np.empty(grad.shape, x.dtype)
    take, nan = np.empty(grad.shape, bool), np.empty(grad.shape, bool)

    def choose(nans: bool):
        chosen[...] = first[0][:, None] * kernel_cols + first[1]
        best.fill(-np.inf)
        for t, tap in enumerate(_tap_views(canvas, out, kernel_size, stride, dilation)):
            np.greater(tap, best, out=take)
            if nans:
                np.logical_or(take, np.isnan(tap, out=nan), out=take)
            # a tap that takes over lies inside the input, so at or after the first tap inside: the chosen
            # index only grows, and a maximum updates it
            np.maximum(chosen, take * index(t), out=chosen)
            np.maximum(best, tap, out=best)  # NaN propagates: a window's maximum is NaN if it holds one

    choose(nans=False)
    if np.isnan(best).any():  # only then can a NaN have been passed over: choose again, minding them
        choose(nans=True)
    canvas[...] = 0  # from here on, the gradient's canvas
    disjoint = _disjoint(kernel_size, stride, dilation)
    for t, view in enumerate(_tap_views(canvas, out, kernel_size, stride, dilation)):
        np.equal(chosen, t, out=take)
        if disjoint:  # every spot of the canvas belongs to one tap of one window
            np.multiply(grad, take, out=view)
        else:  # overlapping windows: gradients add up
            view += grad * take
    inside = canvas[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]
    return np.ascontiguousarray(inside) if batched else np.ascontiguousarray(inside[0])


def _counts(size, k, s, p, out, include_pad):
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if not include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


def _divisor(x, kernel_size, stride, padding, out_size, count_include_pad, divisor_override):
    """How many elements each window of avg_pool2d averages, as an (OH, OW) array or the override."""
    if divisor_override is not None:
        return divisor_override
    rows, cols = (_counts(*a, count_include_pad) for a in zip(x.shape[-2:], kernel_size, stride, padding, out_size))
    return np.outer(rows, cols).astype(x.dtype)


@_in_float32
def _avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, batched = _batched(x, 2)
    out_size, taps = _pool_taps(x, kernel_size, stride, padding, (1, 1), ceil_mode, 0)
    total = np.array(next(taps))
    for tap in taps:
        total += tap
    total /= _divisor(x, kernel_size, stride, padding, out_size, count_include_pad, divisor_override)
    return total if batched else total[0]


@_in_float32
def _avg_pool2d_backward(grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Each output's gradient, over its divisor, added onto its window: one strided add per tap."""
    x, batched = _batched(x, 2)
    grad = grad if batched else grad[None]
    out = grad.shape[-2:]
    scaled = grad / _divisor(x, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    canvas, inside = _pool_canvas(x, kernel_size, stride, padding, (1, 1), ceil_mode, scaled.dtype)
    disjoint = _disjoint(kernel_size, stride, (1, 1))
    for view in _tap_views(canvas, out, kernel_size, stride, (1, 1)):
        if disjoint:  # every spot of the canvas belongs to one tap of one window
            view[...] = scaled
        else:  # overlapping windows: gradients add up
            view += scaled
    return np.ascontiguousarray(inside) if batched else np.ascontiguousarray(inside[0])


def _adaptive_mean(x, axis: int, out: int):
    """Means over PyTorch's adaptive bins along one axis."""
    size = x.shape[axis]
    if size == out:
        return x
    if size % out == 0:  # equal bins: a sum of strided views, far faster than NumPy's short-axis reductions
        step = size // out
        total = np.array(x[(slice(None),) * axis + (slice(0, None, step),)])
        for t in range(1, step):
            total += x[(slice(None),) * axis + (slice(t, None, step),)]
        return total / x.dtype.type(step)
    # unequal bins: add the t-th element of every bin at once (a gather), short bins reading an appended zero
    starts = np.arange(out) * size // out
    lengths = -(-(np.arange(out) + 1) * size // out) - starts
    x = np.concatenate([x, np.zeros_like(x, shape=x.shape[:axis] + (1,) + x.shape[axis + 1:])], axis)
    total = np.take(x, starts, axis=axis)
    for t in range(1, lengths.max()):
        total += np.take(x, np.where(t < lengths, starts + t, size), axis=axis)
    return total / lengths.reshape((-1,) + (1,) * (x.ndim - axis - 1)).astype(x.dtype)


@_in_float32
def _adaptive_avg_pool2d(x, output_size):
    if 0 in output_size:
        return np.zeros(x.shape[:-2] + tuple(output_size), x.dtype)
    if tuple(output_size) == (1, 1):
        return np.mean(x, axis=(-2, -1), keepdims=True)
    out = _adaptive_mean(_adaptive_mean(x, x.ndim - 2, output_size[0]), x.ndim - 1, output_size[1])
    return np.array(out, dtype=x.dtype)


# -- softmax and padding ------------------------------------------------------------------------------

def _softmax_core(a, dim, log: bool):
    if a.ndim == 0:
        return np.zeros_like(a) if log else np.ones_like(a)
    if a.size == 0:
        return a.copy()
    shifted = np.subtract(a, np.max(a, axis=dim, keepdims=True))
    if log:
        shifted -= np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
        return shifted
    e = np.exp(shifted, out=shifted)  # in place: one temporary for the whole op
    e /= np.sum(e, axis=dim, keepdims=True)
    return e


@_in_float32
def _softmax(a, dim, dtype=None):
    return _softmax_core(a, dim, log=False)


@_in_float32
def _log_softmax(a, dim, dtype=None):
    return _softmax_core(a, dim, log=True)


def _pad(a, pad, mode, value):
    """Negative padding crops: circular crops before it wraps, reflect and replicate read the uncropped input
    (PyTorch's rules), constant does either."""
    pairs = [(0, 0)] * a.ndim
    for k in range(len(pad) // 2):
        pairs[a.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    crop = tuple(slice(max(-b, 0), n - max(-e, 0)) for (b, e), n in zip(pairs, a.shape))
    widths = [(max(b, 0), max(e, 0)) for b, e in pairs]
    if mode in ("constant", "circular"):
        return _grow(a[crop], widths, mode, value)
    out = _grow(a, widths, mode, value)
    return np.ascontiguousarray(out[tuple(slice(c.start, c.stop + b + e) for c, (b, e) in zip(crop, widths))])


def _grow(a, widths, mode, value=None):
    """a with (before, after) elements added per axis, in one new array: the input is copied into the
    middle, then each axis' borders are filled from what is already there (corners come out right because
    every axis copies whole slabs, borders of the axes before it included)."""
    shape = tuple(n + b + e for n, (b, e) in zip(a.shape, widths))
    if mode == "constant":
        out = np.full(shape, 0 if value is None else value, a.dtype)
    else:
        out = np.empty(shape, a.dtype)
    out[tuple(slice(b, b + n) for n, (b, _) in zip(a.shape, widths))] = a
    if mode == "constant":
        return out
    for axis, ((before, after), n) in enumerate(zip(widths, a.shape)):
        def along(start, stop, step=1):
            return (slice(None),) * axis + (slice(start, stop if stop is None or stop >= 0 else None, step),)
        end = before + n  # one past the input's last element along this axis
        if mode == "reflect":  # mirrored around the first and last element, which are not repeated
            out[along(0, before)] = out[along(2 * before, before, -1)]
            out[along(end, end + after)] = out[along(end - 2, end - 2 - after, -1)]
        elif mode == "replicate":
            out[along(0, before)] = out[along(before, before + 1)]
            out[along(end, end + after)] = out[along(end - 1, end)]
        else:  # circular
            out[along(0, before)] = out[along(n, n + before)]
            out[along(end, end + after)] = out[along(before, before + after)]
    return out


# -- activations: fused NumPy versions of the composites (used when no gradient is recorded) ------------

# Branch-free forms: NumPy's where (and copyto with where=) cost ~5 ns an element on random signs.

@_in_float32
def _relu(a):
    return np.maximum(a, 0, dtype=a.dtype)  # NaN propagates; -inf gives 0


@_in_float32
def _leaky_relu(a, negative_slope):
    if negative_slope == 0:
        return np.maximum(a, 0)
    # x > 0 keeps x and x < 0 takes slope * x: the larger of the two for slope < 1, the smaller above 1
    pick = np.maximum if negative_slope < 1 else np.minimum
    return pick(a, a * a.dtype.type(negative_slope))


@_in_float32
def _elu(a, alpha):
    # max(x, 0) + alpha * expm1(min(x, 0)): one term is zero on each side of 0
    return np.maximum(a, 0) + np.expm1(np.minimum(a, 0)) * a.dtype.type(alpha)


@_in_float32
def _gelu(a, approximate):
    if approximate == "tanh":
        inner = np.tanh((a + a * a * a * a.dtype.type(0.044715)) * a.dtype.type(np.sqrt(2 / np.pi)))
        return a * a.dtype.type(0.5) * (inner + 1)
    return a * a.dtype.type(0.5) * (special.erf(a * a.dtype.type(1 / np.sqrt(2))) + 1)


@_in_float32
def _silu(a):
    # x / (1 + exp(-x)): accurate at both ends and several times faster than scipy's expit
    denominator = np.exp(np.negative(a), out=...)  # out=...: an array even for 0-d input
    denominator += 1
    return np.divide(a, denominator, out=denominator)


def _softplus_core(a, beta, threshold):
    """(max(z, 0) + log1p(exp(-|z|))) / beta for z = beta * x, which never overflows; above the threshold
    PyTorch returns x itself, so the log1p term is masked off there (it is finite, so no 0 * inf)."""
    scaled = a * a.dtype.type(beta)
    if threshold < 0:  # x itself can be negative above the threshold: no branch-free form
        soft = (np.maximum(scaled, 0) + np.log1p(np.exp(-np.abs(scaled)))) / a.dtype.type(beta)
        return np.where(scaled > threshold, a, soft)
    tail = np.log1p(np.exp(-np.abs(scaled)))
    tail *= scaled <= threshold
    return (np.maximum(scaled, 0) + tail) / a.dtype.type(beta)


@_in_float32
def _softplus(a, beta, threshold):
    return _softplus_core(a, beta, threshold)


@_in_float32
def _mish(a):
    return a * np.tanh(_softplus_core(a, 1.0, 20.0))


@_in_float32
def _logsigmoid(a):
    # min(x, 0) - log1p(exp(-|x|)): finite everywhere; scipy's log_expit is over ten times slower
    return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))


@_in_float32
def _hardtanh(a, min_val, max_val):
    if a.dtype.kind in "iu":  # limits outside an integer dtype's range clip to it
        info = np.iinfo(a.dtype)
        min_val, max_val = (min(max(int(v), info.min), info.max) for v in (min_val, max_val))
    return np.clip(a, a.dtype.type(min_val), a.dtype.type(max_val))  # NaN stays NaN


KERNELS = {
    "conv1d": _conv1d,
    "conv2d": _conv2d,
    "conv_transpose2d": _conv_transpose2d,
    "max_pool2d": _max_pool2d,
    "max_pool2d_backward": _max_pool2d_backward,
    "avg_pool2d": _avg_pool2d,
    "avg_pool2d_backward": _avg_pool2d_backward,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "pad": _pad,
    "relu": _relu,
    "leaky_relu": _leaky_relu,
    "elu": _elu,
    "gelu": _gelu,
    "silu": _silu,
    "softplus": _softplus,
    "mish": _mish,
    "logsigmoid": _logsigmoid,
    "hardtanh": _hardtanh,
}
