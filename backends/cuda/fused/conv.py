"""Convolution through cuDNN when CuPy exposes it (cupyx.cudnn, CuPy 13 and earlier), else the shared im2col.

conv2d is cuDNN's forward convolution; conv_transpose2d, the adjoint of conv2d, is cuDNN's backward-data
convolution with the same filter layout. Configurations cuDNN cannot take (asymmetric padding, dtypes
without a cuDNN type) and any cuDNN error fall back to the shared kernels, which give the same values.
"""
from __future__ import annotations

import numpy as np

_CUDNN_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def load_cudnn():
    """cupyx.cudnn, or None when this CuPy has no cuDNN (removed in CuPy 14) or libcudnn is missing."""
    try:
        import cupy.cuda.cudnn  # noqa: F401  (loads libcudnn)
        import cupyx.cudnn as cudnn
    except Exception:
        return None
    return cudnn


def build(cupy, shared: dict) -> dict:
    cudnn = load_cudnn()
    if cudnn is None:
        return {}
    shared_conv2d, shared_transpose = shared["conv2d"], shared["conv_transpose2d"]
    failures = (cupy.cuda.cudnn.CuDNNError, RuntimeError, ValueError, TypeError)

    def symmetric(padding) -> tuple | None:
        pads = tuple(before for before, after in padding)
        return pads if all(before == after for before, after in padding) else None

    def conv2d(x, w, bias, stride, padding, dilation, groups):
        pad = symmetric(padding)
        if pad is None or x.dtype not in _CUDNN_DTYPES:
            return shared_conv2d(x, w, bias, stride, padding, dilation, groups)
        batched = x.ndim == 4
        xb = cupy.ascontiguousarray(x if batched else x[None])
        n, _, h, width = xb.shape
        out_channels, _, kh, kw = w.shape
        size = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                for i, p, d, k, s in zip((h, width), pad, dilation, (kh, kw), stride)]
        y = cupy.empty((n, out_channels, *size), x.dtype)
        if y.size:
            try:
                cudnn.convolution_forward(xb, cupy.ascontiguousarray(w), bias, y, pad, tuple(stride),
                                          tuple(dilation), groups, auto_tune=False, tensor_core="auto")
            except failures:
                return shared_conv2d(x, w, bias, stride, padding, dilation, groups)
        return y if batched else y[0]

    def conv1d(x, w, bias, stride, padding, dilation, groups):
        out = conv2d(x[..., None, :], w[:, :, None, :], bias, (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                     (1,) + tuple(dilation), groups)
        return out[..., 0, :]

    def conv_transpose2d(x, w, bias, stride, padding, output_padding, groups, dilation):
        if x.dtype not in _CUDNN_DTYPES:
            return shared_transpose(x, w, bias, stride, padding, output_padding, groups, dilation)
        batched = x.ndim == 4
        xb = cupy.ascontiguousarray(x if batched else x[None])
        n, _, h, width = xb.shape
        _, out_group, kh, kw = w.shape
        size = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1
                for i, k, s, p, e, d in zip((h, width), (kh, kw), stride, padding, output_padding, dilation)]
        y = cupy.empty((n, out_group * groups, *size), x.dtype)
        if y.size:
            try:
                cudnn.convolution_backward_data(cupy.ascontiguousarray(w), xb, bias, y, tuple(padding),
                                                tuple(stride), tuple(dilation), groups, deterministic=False,
                                                auto_tune=False, tensor_core="auto")
            except failures:
                return shared_transpose(x, w, bias, stride, padding, output_padding, groups, dilation)
        return y if batched else y[0]

    return {"conv1d": conv1d, "conv2d": conv2d, "conv_transpose2d": conv_transpose2d}
