"""Convolution overrides: im2col + one GEMM per group, and col2im for the transposed convolution.

They receive normalized attributes (pairs per spatial dim; conv padding as ((before, after), ...)).
Half-precision inputs compute in float32 and are rounded once at the end.
"""
from __future__ import annotations

from .common import batched, grower, in_float32
from .library import ArrayLib


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

    def _conv_runs(x, w, bias, stride, padding, dilation, groups):
        """Stride 1: computing every output row at the padded width makes each tap's input one contiguous run
        of the flattened plane, so im2col copies long runs; one matmul per group covers the whole batch.
        The dw * (kw - 1) extra columns per row are computed and dropped (cheaper than a scattered copy)."""
        n, c, h, wd = x.shape
        (top, bottom), (left, right) = padding
        hp, wp = h + top + bottom, wd + left + right
        out_channels, group_channels, kh, kw = w.shape
        (dh, dw) = dilation
        oh, ow = hp - dh * (kh - 1), wp - dw * (kw - 1)
        flat = xp.zeros((n, c, hp * wp + dw * (kw - 1)), x.dtype)  # the tail keeps the last tap's run in bounds
        plane = flat[:, :, :hp * wp]
        plane.shape = (n, c, hp, wp)  # a view: NumPy and CuPy raise rather than copy on setting .shape
        plane[:, :, top:top + h, left:left + wd] = x
        sn, sc, sl = flat.strides
        runs = as_strided(flat, (groups, group_channels, kh, kw, n, oh * wp),
                          (group_channels * sc, sc, dh * wp * sl, dw * sl, sn, sl), False)
        cols = runs.reshape(groups, group_channels * kh * kw, n * oh * wp)
        out = _product(w, cols, bias, groups).reshape(out_channels, n, oh, wp)
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
    def _conv_transpose2d(x, w, bias, stride, padding, output_padding, groups, dilation):
        """One matmul per group gives every tap's contribution (batch inside the columns, so the GEMM sees one
        big product); col2im then adds each tap's plane, strided, onto a zero canvas. The batch is the canvas's
        last dim, so that each add runs over rows of width x batch contiguous elements, not of the image width
        alone (which for small feature maps left NumPy a few elements per inner loop)."""
        x, had_batch = batched(x, 2)
        n, in_channels, h, wd = x.shape
        _, out_group, kh, kw = w.shape
        out_channels, in_group = out_group * groups, in_channels // groups
        taps = w.reshape(groups, in_group, out_group, kh, kw).transpose(0, 3, 4, 2, 1)
        taps = taps.reshape(groups, kh * kw * out_group, in_group)
        inputs = xp.ascontiguousarray(x.transpose(1, 2, 3, 0)).reshape(groups, in_group, h * wd * n)
        cols = xp.matmul(taps, inputs).reshape(groups, kh, kw, out_group, h, wd, n)
        size = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1
                for i, k, s, p, e, d in zip((h, wd), (kh, kw), stride, padding, output_padding, dilation)]
        spans = [(i - 1) * s + 1 for i, s in zip((h, wd), stride)]
        extent = tuple(max(d * (k - 1) + span, p + o)
                       for d, k, span, p, o in zip(dilation, (kh, kw), spans, padding, size))
        canvas = xp.zeros((groups, out_group) + extent + (n,), cols.dtype)
        for i in range(kh):
            rows = slice(i * dilation[0], i * dilation[0] + spans[0], stride[0])
            for j in range(kw):
                canvas[:, :, rows, j * dilation[1]:j * dilation[1] + spans[1]:stride[1]] += cols[:, i, j]
        out = canvas[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
        out = xp.ascontiguousarray(out.reshape(out_channels, size[0], size[1], n).transpose(3, 0, 1, 2))
        if bias is not None:
            out += bias.reshape(-1, 1, 1)
        return out if had_batch else out[0]

    return {"conv1d": _conv1d, "conv2d": _conv2d, "conv_transpose2d": _conv_transpose2d}
