"""The CPU's ``max_pool2d`` and ``max_pool2d_backward`` as numba loops (``pool_loops``), where numba is
installed; without it, and for half-precision or bool inputs, the shared NumPy kernels run.

Chosen by measurement (float32, 2 cores, min of 30, interleaved with the NumPy kernels in one process): the
NumPy kernels take one whole-array pass per kernel tap, and the backward several more per tap to find each
window's maximum again; each loop does its work in one pass. NumPy / numba, in ms:

    (64, 16, 28, 28), kernel 2:                forward 0.42 / 0.14   backward 1.47 / 0.63
    (64, 32, 14, 14), kernel 2:                forward 0.30 / 0.11   backward 0.93 / 0.33
    (8, 64, 56, 56), kernel 3, stride 2, pad 1: forward 2.1 / 1.9     backward 10.0 / 5.4
    (32, 32, 16, 16), kernel 3, stride 1, pad 1: forward 1.14 / 0.31  backward 5.4 / 2.6

numba is imported on the first call, so that importing ember stays cheap.
"""
from __future__ import annotations

import numpy as np

from ember.backends.arraykernels.common import grower
from ember.backends.arraykernels.pooling import pool_extent

from . import fusion
from .dtypes import LOW_PRECISION
from .library import NUMPY

_grow = grower(NUMPY)


_pool_loops = fusion.imported_on_first_call("pool_loops")


def _compiled(dtype: np.dtype) -> bool:
    """Whether the loops take this dtype (numba has no half-precision or bfloat16 arithmetic)."""
    return dtype.kind in "iuf" and dtype not in LOW_PRECISION


def _planes(a: np.ndarray) -> np.ndarray:
    """(N, C, H, W) or (C, H, W) as a C-contiguous (planes, H, W) array."""
    return np.ascontiguousarray(a).reshape((-1,) + a.shape[-2:])


def _lowest(dtype: np.dtype):
    """What no element loses to: -inf, or an integer dtype's minimum (in the dtype, so numba's types agree)."""
    return dtype.type(-np.inf if dtype.kind == "f" else np.iinfo(dtype).min)


def build(numpy_kernels: dict) -> dict:
    """``{"max_pool2d": ..., "max_pool2d_backward": ...}`` falling back to ``numpy_kernels``' for what the
    loops do not take; {} without numba."""
    if not fusion.numba_available():
        return {}
    numpy_forward, numpy_backward = numpy_kernels["max_pool2d"], numpy_kernels["max_pool2d_backward"]

    def padded_planes(x, kernel_size, stride, padding, dilation, ceil_mode):
        """(x as (planes, H', W') with any padding filled with the lowest value, output size, the compiled
        (forward, backward) loops for these windows, (top, left, bottom, right) of the input in the planes)."""
        out_size, right = pool_extent(x.shape[-2:], kernel_size, stride, padding, dilation, ceil_mode)
        padded = bool(any(padding) or any(right))
        planes = _planes(x)
        (top, left), (h, w) = padding, x.shape[-2:]
        if padded:
            planes = _grow(planes, ((0, 0), (top, right[0]), (left, right[1])), "constant", _lowest(x.dtype))
        compiled = _pool_loops().loops(*kernel_size, *stride, *dilation, padded)
        return planes, tuple(out_size), compiled, (top, left, top + h, left + w)

    def max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
        if not _compiled(x.dtype):
            return numpy_forward(x, kernel_size, stride, padding, dilation, ceil_mode)
        planes, out_size, (forward, _), _ = padded_planes(x, kernel_size, stride, padding, dilation, ceil_mode)
        out = np.empty((planes.shape[0],) + out_size, x.dtype)
        forward(planes, out)
        return out.reshape(x.shape[:-2] + out_size)

    def max_pool2d_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode):
        if not _compiled(x.dtype) or grad.dtype != x.dtype:
            return numpy_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode)
        planes, _, (_, backward), inside = padded_planes(x, kernel_size, stride, padding, dilation, ceil_mode)
        out = np.zeros(planes.shape, grad.dtype)
        backward(_planes(grad), planes, out, inside, _lowest(x.dtype))
        top, left, bottom, right = inside
        return np.ascontiguousarray(out[:, top:bottom, left:right]).reshape(x.shape)

    return {"max_pool2d": max_pool2d, "max_pool2d_backward": max_pool2d_backward}


__all__ = ["build"]
