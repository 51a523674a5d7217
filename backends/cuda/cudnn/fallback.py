"""Array-kernel convolutions for the ops the shared kernels do not cover (3-D, and transposed 1-D and 3-D), so
that every op the cuDNN path overrides has a fallback for the configurations cuDNN refuses.

Written for any NumPy-like module (CuPy on the GPU; CI runs them with NumPy): im2col over a sliding-window view
and one matmul per group for the forward, one matmul per group and col2im (one strided add per kernel tap) for
the transposed convolution. Half-precision inputs compute in float32, as the shared kernels do.
"""
from __future__ import annotations

import itertools
import math

from ember.backends.arraykernels import ArrayLib
from ember.backends.arraykernels.common import batched, grower, in_float32


def convolution(lib: ArrayLib):
    """``conv{n}d(x, w, bias, stride, padding, dilation, groups)`` for any n, padding as (before, after) pairs."""
    xp, grow = lib.xp, grower(lib)

    @in_float32(lib)
    def conv(x, w, bias, stride, padding, dilation, groups):
        n = w.ndim - 2
        x, had_batch = batched(x, n)
        if any(p for pair in padding for p in pair):
            x = grow(x, ((0, 0), (0, 0)) + tuple(padding), "constant", 0)
        kernel = w.shape[2:]
        spatial, taps = tuple(range(2, 2 + n)), tuple(range(2 + n, 2 + 2 * n))
        reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        windows = lib.sliding_window_view(x, reach, spatial, False)
        windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)
                          + tuple(slice(None, None, d) for d in dilation)]  # (N, C, *out, *kernel)
        batch, out = windows.shape[0], windows.shape[2:2 + n]
        out_channels, depth = w.shape[0], math.prod(w.shape[1:])
        cols = windows.transpose((1,) + taps + (0,) + spatial).reshape(groups, depth, batch * math.prod(out))
        y = xp.matmul(w.reshape(groups, out_channels // groups, depth), cols).reshape((out_channels, batch) + out)
        if bias is not None:
            y += bias.reshape((-1,) + (1,) * (n + 1))
        y = xp.ascontiguousarray(y.transpose((1, 0) + spatial))
        return y if had_batch else y[0]

    return conv


def transposed_convolution(lib: ArrayLib):
    """``conv_transpose{n}d(x, w, bias, stride, padding, output_padding, groups, dilation)`` for any n."""
    xp = lib.xp

    @in_float32(lib)
    def conv_transpose(x, w, bias, stride, padding, output_padding, groups, dilation):
        n = w.ndim - 2
        x, had_batch = batched(x, n)
        batch, in_channels, size_in = x.shape[0], x.shape[1], x.shape[2:]
        out_group, kernel = w.shape[1], w.shape[2:]
        in_group, taps = in_channels // groups, math.prod(kernel)
        # every tap's contribution: (groups, taps * out_group, in_group) @ (groups, in_group, positions)
        weights = w.reshape((groups, in_group, out_group, taps)).transpose(0, 3, 2, 1)
        inputs = x.reshape(batch, groups, in_group, math.prod(size_in)).transpose(1, 2, 0, 3)
        cols = xp.matmul(weights.reshape(groups, taps * out_group, in_group),
                         inputs.reshape(groups, in_group, batch * math.prod(size_in)))
        cols = cols.reshape((groups, taps, out_group, batch) + size_in)
        size = tuple((i - 1) * s - 2 * p + d * (k - 1) + e + 1
                     for i, k, s, p, e, d in zip(size_in, kernel, stride, padding, output_padding, dilation))
        spans = tuple((i - 1) * s + 1 for i, s in zip(size_in, stride))
        extent = tuple(max(d * (k - 1) + span, p + o) for d, k, span, p, o in zip(dilation, kernel, spans, padding,
                                                                                  size))
        canvas = xp.zeros((groups, out_group, batch) + extent, cols.dtype)
        for t, tap in enumerate(itertools.product(*(range(k) for k in kernel))):
            where = tuple(slice(i * d, i * d + span, s) for i, d, span, s in zip(tap, dilation, spans, stride))
            canvas[(slice(None),) * 3 + where] += cols[:, t]
        out = canvas[(slice(None),) * 3 + tuple(slice(p, p + o) for p, o in zip(padding, size))]
        out = out.reshape((groups * out_group, batch) + size).transpose((1, 0) + tuple(range(2, 2 + n)))
        out = xp.ascontiguousarray(out)
        if bias is not None:
            out += bias.reshape((-1,) + (1,) * n)
        return out if had_batch else out[0]

    return conv_transpose


def transposed_convolution_1d(transposed_2d):
    """conv_transpose1d through a 2-D kernel, over a height of one."""
    def conv_transpose1d(x, w, bias, stride, padding, output_padding, groups, dilation):
        out = transposed_2d(x[..., None, :], w[:, :, None, :], bias, (1,) + tuple(stride), (0,) + tuple(padding),
                            (0,) + tuple(output_padding), groups, (1,) + tuple(dilation))
        return out[..., 0, :]
    return conv_transpose1d
