"""Convolution overrides: im2col + one GEMM per group, and col2im for the transposed convolution.

They receive normalized attributes (pairs per spatial dim; conv padding as ((before, after), ...)).
Half-precision inputs compute in float32 and are rounded once at the end.
"""
from __future__ import annotations

import math

from .common import batched, grower, in_float32
from .library import ArrayLib

#: From this many output positions per sample on, the weight gradient multiplies sample by sample (the incoming
#: gradient is read in place, and each GEMM is long enough); below it, one GEMM over the whole batch (the
#: gradient copied channels-first) wins. Measured (float32, 2 cores, NumPy), per sample / whole batch, in ms:
#: (64, 1, 28, 28) 3x3 to 16: 0.40 / 1.02; (8, 64, 28, 28) 3x3 to 128: 6.7 / 7.3; (32, 3, 32, 32) 5x5 to 16:
#: 1.9 / 2.0; (16, 3, 64, 64) 7x7 stride 2: 2.3 / 2.5; (32, 16, 16, 16) 3x3 to 32: 1.27 / 1.16;
#: (64, 16, 14, 14) 3x3 to 32: 2.1 / 2.0; (128, 64, 7, 7) 3x3 to 64: 8.2 / 6.3.
PER_SAMPLE_MIN_POSITIONS = 512


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    as_strided, windows_of = lib.as_strided, lib.sliding_window_view
    grow = grower(lib)

    @in_float32(lib)
    def _conv2d(x, w, bias, stride, padding, dilation, groups):
        x, had_batch = batched(x, 2)
        conv = _conv_runs if tuple(stride) == (1, 1) else _conv_windows
        out = conv(x, w, bias, stride, padding, dilation, groups)
        return out if had_batch else out[0]

    def _product(w, cols, bias, groups: int):
        """weight @ columns per group, as an (out_channels, columns) matrix; the bias is added along its long
        rows, which is much faster than along the short rows of the final (N, C, H, W) layout."""
        out_channels = w.shape[0]
        out = xp.matmul(w.reshape(groups, out_channels // groups, cols.shape[1]), cols).reshape(out_channels, -1)
        if bias is not None:
            out += bias[:, None]
        return out

    def _run_columns(x, kernel, padding, dilation, groups: int):
        """Stride 1: computing every output row at the padded width makes each tap's input one contiguous run
        of the flattened plane, so im2col copies long runs, with the batch inside the columns:
        (groups, depth, n * oh * wp), and (oh, ow, wp). The dw * (kw - 1) extra columns per row are computed
        and dropped (cheaper than a scattered copy)."""
        n, c, h, wd = x.shape
        (top, bottom), (left, right) = padding
        hp, wp = h + top + bottom, wd + left + right
        (kh, kw), (dh, dw) = kernel, dilation
        oh, ow = hp - dh * (kh - 1), wp - dw * (kw - 1)
        flat = xp.zeros((n, c, hp * wp + dw * (kw - 1)), x.dtype)  # the tail keeps the last tap's run in bounds
        plane = flat[:, :, :hp * wp]
        plane.shape = (n, c, hp, wp)  # a view: NumPy and CuPy raise rather than copy on setting .shape
        plane[:, :, top:top + h, left:left + wd] = x
        sn, sc, sl = flat.strides
        group_channels = c // groups
        runs = as_strided(flat, (groups, group_channels, kh, kw, n, oh * wp),
                          (group_channels * sc, sc, dh * wp * sl, dw * sl, sn, sl), False)
        return runs.reshape(groups, group_channels * kh * kw, n * oh * wp), (oh, ow, wp)

    def _conv_runs(x, w, bias, stride, padding, dilation, groups):
        """Stride 1: im2col by runs (``_run_columns``), one matmul per group covers the whole batch."""
        cols, (oh, ow, wp) = _run_columns(x, w.shape[2:], padding, dilation, groups)
        out = _product(w, cols, bias, groups).reshape(w.shape[0], x.shape[0], oh, wp)
        return xp.ascontiguousarray(out[..., :ow].transpose(1, 0, 2, 3))

    def _conv_windows(x, w, bias, stride, padding, dilation, groups):
        """Strided: im2col over a sliding-window view (no wasted columns), batch inside the columns so that
        the GEMM sees one big product per group."""
        if any(p for pair in padding for p in pair):
            x = grow(x, ((0, 0), (0, 0)) + tuple(padding), "constant", 0)
        out_channels, group_channels, kh, kw = w.shape
        (sh, sw), (dh, dw) = stride, dilation
        windows = windows_of(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), (2, 3), False)[:, :, ::sh, ::sw, ::dh, ::dw]
        n, _, oh, ow = windows.shape[:4]
        depth = group_channels * kh * kw
        cols = windows.transpose(1, 4, 5, 0, 2, 3).reshape(groups, depth, n * oh * ow)
        out = _product(w, cols, bias, groups).reshape(out_channels, n, oh, ow)
        return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))

    def _conv1d(x, w, bias, stride, padding, dilation, groups):
        out = _conv2d(x[..., None, :], w[:, :, None, :], bias, (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                      (1,) + tuple(dilation), groups)
        return out[..., 0, :]

    @in_float32(lib)
    def _convolution_backward_weight(grad, x, kernel_size, stride, padding, dilation, groups):
        """Every input window (im2col) against the gradient of the output it made, summed over batch and
        positions by GEMM; any number of spatial dims."""
        n = len(kernel_size)
        if x.ndim == n + 1:
            grad, x = grad[None], x[None]
        batch, channels, out_channels = x.shape[0], x.shape[1], grad.shape[1]
        out = grad.shape[2:]  # windows past the last output have no gradient (transposed convolutions)
        positions = math.prod(out)
        if positions < PER_SAMPLE_MIN_POSITIONS and n == 2 and tuple(stride) == (1, 1):
            # im2col by runs (2.7x faster than from the window view), the gradient zero-padded to their width
            cols, (oh, _, wp) = _run_columns(x, kernel_size, padding, dilation, groups)
            rows = xp.zeros((out_channels, batch, oh, wp), grad.dtype)
            rows[:, :, :out[0], :out[1]] = grad.transpose(1, 0, 2, 3)
            product = xp.matmul(cols, rows.reshape(groups, out_channels // groups, -1).transpose(0, 2, 1))
        else:
            if any(p for pair in padding for p in pair):
                x = grow(x, ((0, 0), (0, 0)) + tuple(padding), "constant", 0)
            spatial, taps = tuple(range(2, 2 + n)), tuple(range(2 + n, 2 + 2 * n))
            windows = windows_of(x, tuple(d * (k - 1) + 1 for k, d in zip(kernel_size, dilation)), spatial, False)
            windows = windows[(slice(None), slice(None))
                              + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, stride))
                              + tuple(slice(None, None, d) for d in dilation)]  # (N, C, *out, *kernel)
            depth = channels // groups * math.prod(kernel_size)
            if positions >= PER_SAMPLE_MIN_POSITIONS:
                cols = windows.transpose((0, 1) + taps + spatial).reshape(batch, groups, depth, positions)
                rows = grad.reshape(batch, groups, out_channels // groups, positions)
                product = xp.matmul(cols, rows.transpose(0, 1, 3, 2)).sum(0)
            else:
                cols = windows.transpose((1,) + taps + (0,) + spatial).reshape(groups, depth, batch * positions)
                rows = grad.transpose((1, 0) + spatial).reshape(groups, out_channels // groups, batch * positions)
                product = xp.matmul(cols, rows.transpose(0, 2, 1))
        # (groups, depth, out / groups) -> (out, depth): columns times rows ran up to 1.7x faster than the
        # product the other way round
        return product.transpose(0, 2, 1).reshape((out_channels, channels // groups) + tuple(kernel_size))

    return {"conv1d": _conv1d, "conv2d": _conv2d, "conv_transpose2d": transposed_convolution(lib),
            "convolution_backward_weight": _convolution_backward_weight}


def add_taps(xp, cols, stride, padding, dilation, size):
    """col2im by whole planes: each tap's (groups, out_group, h, w, n) plane added, strided, onto a zero
    canvas; the output (groups, out_group, *size, n) is a crop of it. The batch is the last dim, so that each
    add runs over rows of width x batch contiguous elements, not of the image width alone (which for small
    feature maps left NumPy a few elements per inner loop)."""
    groups, kh, kw, out_group, h, wd, n = cols.shape
    spans = [(i - 1) * s + 1 for i, s in zip((h, wd), stride)]
    extent = tuple(max(d * (k - 1) + span, p + o) for d, k, span, p, o in zip(dilation, (kh, kw), spans, padding, size))
    canvas = xp.zeros((groups, out_group) + extent + (n,), cols.dtype)
    for i in range(kh):
        rows = slice(i * dilation[0], i * dilation[0] + spans[0], stride[0])
        for j in range(kw):
            canvas[:, :, rows, j * dilation[1]:j * dilation[1] + spans[1]:stride[1]] += cols[:, i, j]
    return canvas[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]


def transposed_convolution(lib: ArrayLib, col2im=None):
    """The conv_transpose2d kernel: one matmul per group gives every tap's contribution, (groups, kh, kw,
    out_group, h, w, n) with the batch inside the columns (so the GEMM sees one big product), and
    ``col2im(cols, stride, padding, dilation, size)`` sums them into the output, (groups, out_group, *size,
    n); ``add_taps`` by default, a backend may bring a compiled loop."""
    xp = lib.xp
    col2im = col2im or (lambda *args: add_taps(xp, *args))

    @in_float32(lib)
    def conv_transpose2d(x, w, bias, stride, padding, output_padding, groups, dilation):
        x, had_batch = batched(x, 2)
        n, in_channels, h, wd = x.shape
        _, out_group, kh, kw = w.shape
        out_channels, in_group = out_group * groups, in_channels // groups
        taps = w.reshape(groups, in_group, out_group, kh, kw).transpose(0, 3, 4, 2, 1)
        taps = taps.reshape(groups, kh * kw * out_group, in_group)
        inputs = xp.ascontiguousarray(x.transpose(1, 2, 3, 0)).reshape(groups, in_group, h * wd * n)
        cols = xp.matmul(taps, inputs).reshape(groups, kh, kw, out_group, h, wd, n)
        size = tuple((i - 1) * s - 2 * p + d * (k - 1) + e + 1
                     for i, k, s, p, e, d in zip((h, wd), (kh, kw), stride, padding, output_padding, dilation))
        out = col2im(cols, stride, padding, dilation, size)
        out = xp.ascontiguousarray(out.reshape(out_channels, size[0], size[1], n).transpose(3, 0, 1, 2))
        if bias is not None:
            out += bias.reshape(-1, 1, 1)
        return out if had_batch else out[0]

    return conv_transpose2d
