"""Pooling overrides: tap loops over strided views, forward and backward.

Window bookkeeping (sizes, divisors, first taps) is computed on the host with NumPy and moved with
``xp.asarray``; the per-element work is whole-array operations, one per kernel tap.
"""
from __future__ import annotations

import numpy as np

from .common import batched, grower, in_float32
from .library import ArrayLib


def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size; in ceil mode the last window must start inside input or left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def pool_extent(size, kernel, stride, padding, dilation, ceil_mode):
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


def _disjoint(kernel, stride, dilation) -> bool:
    """Whether no two windows share an element, so that each gradient lands on its own spot."""
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))


def _counts(size, k, s, p, out, include_pad):
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if not include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    low = lib.low_precision
    grow = grower(lib)
    widened = in_float32(lib)

    def _pool_taps(x, kernel, stride, padding, dilation, ceil_mode, fill):
        """The output size and a generator of one strided (N, C, OH, OW) view per kernel tap."""
        out, right = pool_extent(x.shape[-2:], kernel, stride, padding, dilation, ceil_mode)
        if any(padding) or any(right):
            x = grow(x, ((0, 0), (0, 0), (padding[0], right[0]), (padding[1], right[1])), "constant", fill)
        return out, _tap_views(x, out, kernel, stride, dilation)

    def _pool_canvas(x, kernel, stride, padding, dilation, ceil_mode, dtype):
        """A zero padded plane for a pooling gradient, and the slice of it that is the input."""
        n, c, h, w = x.shape
        _, right = pool_extent((h, w), kernel, stride, padding, dilation, ceil_mode)
        canvas = xp.zeros((n, c, h + padding[0] + right[0], w + padding[1] + right[1]), dtype)
        return canvas, canvas[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]

    def _max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
        x, had_batch = batched(x, 2)
        fill = -np.inf if x.dtype.kind == "f" or x.dtype in low else np.iinfo(x.dtype).min
        _, taps = _pool_taps(x, kernel_size, stride, padding, dilation, ceil_mode, fill)
        out = xp.array(next(taps))
        for tap in taps:
            xp.maximum(out, tap, out=out)  # NaN propagates, as in PyTorch
        return out if had_batch else out[0]

    @widened
    def _max_pool2d_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode):
        """PyTorch's choice in each window: its first element inside the input, replaced by every later one
        that is larger or NaN. One pass per tap finds it for all windows at once, one more routes the gradient.
        Branch-free updates throughout: a masked copy (copyto with where=) costs several times more.
        Without padding (the usual case) the windows read the input itself, every window's first tap is its
        first element, and where disjoint windows tile the whole input the gradient's canvas is the result."""
        x, had_batch = batched(x, 2)
        grad = grad if had_batch else grad[None]
        h, w = x.shape[-2:]
        out, right = pool_extent((h, w), kernel_size, stride, padding, dilation, ceil_mode)
        padded = any(padding) or any(right)
        kernel_cols = kernel_size[1]
        index = np.int16 if kernel_size[0] * kernel_cols < 2 ** 15 else np.int64
        if padded:
            plane = grow(x, ((0, 0), (0, 0), (padding[0], right[0]), (padding[1], right[1])), "constant", -np.inf)
            # the first tap inside the input, in each window (not 0 where the window starts in the padding)
            first = [np.maximum(0, -((np.arange(o) * s - p) // d))
                     for o, s, p, d in zip(out, stride, padding, dilation)]
            first_tap = xp.asarray((first[0][:, None] * kernel_cols + first[1]).astype(index))
        else:
            plane = x
        chosen, best = xp.empty(grad.shape, index), xp.empty(grad.shape, x.dtype)
        take, nan = xp.empty(grad.shape, bool), xp.empty(grad.shape, bool)
        step = xp.empty(grad.shape, index)

        def choose(nans: bool):
            taps = _tap_views(plane, out, kernel_size, stride, dilation)
            if padded:
                chosen[...] = first_tap
                best.fill(-np.inf)
                start = 0
            else:  # every window starts with its first tap: it is chosen unless a later one takes over
                chosen.fill(0)
                best[...] = next(taps)
                start = 1
            for t, tap in enumerate(taps, start):
                xp.greater(tap, best, out=take)
                if nans:
                    xp.logical_or(take, xp.isnan(tap, out=nan), out=take)
                # a tap that takes over lies inside the input, so at or after the first tap inside: the chosen
                # index only grows, and a maximum updates it
                xp.multiply(take, index(t), out=step)
                xp.maximum(chosen, step, out=chosen)
                xp.maximum(best, tap, out=best)  # NaN propagates: a window's maximum is NaN if it holds one

        if xp is np:  # host memory: a cheap first pass, and a second minding NaNs only if a window holds one
            choose(nans=False)
            if bool(xp.isnan(best).any()):
                choose(nans=True)
        else:  # a device: one pass minding NaNs (two more ops a tap), rather than a host read that syncs
            choose(nans=best.dtype.kind not in "biu")
        disjoint = _disjoint(kernel_size, stride, dilation)
        tiled = disjoint and not padded and all(
            o * s == n and s == d * (k - 1) + 1 for o, s, n, d, k in zip(out, stride, (h, w), dilation, kernel_size))
        if padded:
            canvas = plane
            canvas[...] = 0  # from here on, the gradient's canvas
        elif tiled:
            canvas = xp.empty(x.shape, grad.dtype)  # every element is written below
        else:
            canvas = xp.zeros(x.shape, grad.dtype)
        for t, view in enumerate(_tap_views(canvas, out, kernel_size, stride, dilation)):
            xp.equal(chosen, t, out=take)
            if disjoint:  # every spot of the canvas belongs to one tap of one window
                xp.multiply(grad, take, out=view)
            else:  # overlapping windows: gradients add up
                view += grad * take
        if not padded:
            return canvas if had_batch else canvas[0]
        inside = canvas[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]
        return xp.ascontiguousarray(inside) if had_batch else xp.ascontiguousarray(inside[0])

    def _divisor(x, kernel_size, stride, padding, out_size, count_include_pad, divisor_override):
        """How many elements each window of avg_pool2d averages, as an (OH, OW) array or the override."""
        if divisor_override is not None:
            return divisor_override
        rows, cols = (_counts(*a, count_include_pad)
                      for a in zip(x.shape[-2:], kernel_size, stride, padding, out_size))
        return xp.asarray(np.outer(rows, cols).astype(x.dtype))

    @widened
    def _avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        x, had_batch = batched(x, 2)
        out_size, taps = _pool_taps(x, kernel_size, stride, padding, (1, 1), ceil_mode, 0)
        total = xp.array(next(taps))
        for tap in taps:
            total += tap
        total /= _divisor(x, kernel_size, stride, padding, out_size, count_include_pad, divisor_override)
        return total if had_batch else total[0]

    @widened
    def _avg_pool2d_backward(grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override):
        """Each output's gradient, over its divisor, added onto its window: one strided add per tap."""
        x, had_batch = batched(x, 2)
        grad = grad if had_batch else grad[None]
        out = grad.shape[-2:]
        scaled = grad / _divisor(x, kernel_size, stride, padding, out, count_include_pad, divisor_override)
        canvas, inside = _pool_canvas(x, kernel_size, stride, padding, (1, 1), ceil_mode, scaled.dtype)
        disjoint = _disjoint(kernel_size, stride, (1, 1))
        for view in _tap_views(canvas, out, kernel_size, stride, (1, 1)):
            if disjoint:  # every spot of the canvas belongs to one tap of one window
                view[...] = scaled
            else:  # overlapping windows: gradients add up
                view += scaled
        return xp.ascontiguousarray(inside) if had_batch else xp.ascontiguousarray(inside[0])

    def _adaptive_mean(x, axis: int, out: int):
        """Means over PyTorch's adaptive bins along one axis."""
        size = x.shape[axis]
        if size == out:
            return x
        if size % out == 0:  # equal bins: a sum of strided views, far faster than short-axis reductions
            step = size // out
            total = xp.array(x[(slice(None),) * axis + (slice(0, None, step),)])
            for t in range(1, step):
                total += x[(slice(None),) * axis + (slice(t, None, step),)]
            return total / x.dtype.type(step)
        # unequal bins: add the t-th element of every bin at once (a gather), short bins reading an appended zero
        starts = np.arange(out) * size // out
        lengths = -(-(np.arange(out) + 1) * size // out) - starts
        x = xp.concatenate([x, xp.zeros(x.shape[:axis] + (1,) + x.shape[axis + 1:], x.dtype)], axis)
        total = xp.take(x, xp.asarray(starts), axis=axis)
        for t in range(1, int(lengths.max())):
            total += xp.take(x, xp.asarray(np.where(t < lengths, starts + t, size)), axis=axis)
        divisor = lengths.reshape((-1,) + (1,) * (x.ndim - axis - 1)).astype(x.dtype)
        return total / xp.asarray(divisor)

    @widened
    def _adaptive_avg_pool2d(x, output_size):
        if 0 in output_size:
            return xp.zeros(x.shape[:-2] + tuple(output_size), x.dtype)
        if tuple(output_size) == (1, 1):
            return xp.mean(x, axis=(-2, -1), keepdims=True)
        out = _adaptive_mean(_adaptive_mean(x, x.ndim - 2, output_size[0]), x.ndim - 1, output_size[1])
        return xp.array(out, dtype=x.dtype)

    return {
        "max_pool2d": _max_pool2d,
        "max_pool2d_backward": _max_pool2d_backward,
        "avg_pool2d": _avg_pool2d,
        "avg_pool2d_backward": _avg_pool2d_backward,
        "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    }
