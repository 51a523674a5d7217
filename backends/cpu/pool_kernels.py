"""The CPU's ``max_pool2d`` and ``max_pool2d_backward`` as numba loops (``pool_loops``), where numba is
installed; without it, and for float16 or bool inputs, the shared NumPy kernels run. bfloat16 is read as
it is stored (its bits, compared in float32), so the loops need no widened copies of it.

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
from ember.dispatch import bfloat16

from . import fusion
from .bfloat16_casts import rounded
from .dtypes import LOW_PRECISION, NUMPY_DTYPE
from .library import NUMPY

_grow = grower(NUMPY)
_BFLOAT16 = NUMPY_DTYPE[bfloat16]


_pool_loops = fusion.imported_on_first_call("pool_loops")


def _compiled(dtype: np.dtype) -> bool:
    """Whether the loops take this dtype (numba has no half types: they read bfloat16's bits, not float16's)."""
    return dtype == _BFLOAT16 or (dtype.kind in "iuf" and dtype not in LOW_PRECISION)


def _bits(a: np.ndarray) -> np.ndarray:
    """What the loops read for ``a``: bfloat16 as its uint16 bits, other dtypes as they are."""
    return a.view(np.uint16) if a.dtype == _BFLOAT16 else a


def _planes(a: np.ndarray) -> np.ndarray:
    """(N, C, H, W) or (C, H, W) as a C-contiguous (planes, H, W) array."""
    return np.ascontiguousarray(a).reshape((-1,) + a.shape[-2:])


def _lowest(dtype: np.dtype):
    """What no element loses to: -inf, or an integer dtype's minimum (in the dtype, so numba's types agree)."""
    return dtype.type(-np.inf if dtype.kind == "f" or dtype == _BFLOAT16 else np.iinfo(dtype).min)


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
        compiled = _pool_loops().loops(*kernel_size, *stride, *dilation, padded, x.dtype == _BFLOAT16)
        return _bits(planes), tuple(out_size), compiled, (top, left, top + h, left + w)

    def max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
        if not _compiled(x.dtype):
            return numpy_forward(x, kernel_size, stride, padding, dilation, ceil_mode)
        planes, out_size, (forward, _), _ = padded_planes(x, kernel_size, stride, padding, dilation, ceil_mode)
        out = np.empty((planes.shape[0],) + out_size, x.dtype)
        forward(planes, _bits(out))
        return out.reshape(x.shape[:-2] + out_size)

    def max_pool2d_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode):
        if not _compiled(x.dtype) or grad.dtype != x.dtype:
            return numpy_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode)
        planes, _, (_, backward), inside = padded_planes(x, kernel_size, stride, padding, dilation, ceil_mode)
        half = x.dtype == _BFLOAT16  # bfloat16 gradients add up in float32, rounded once
        out = np.zeros(planes.shape, np.float32 if half else grad.dtype)
        backward(_bits(_planes(grad)), planes, out, inside, np.float32(-np.inf) if half else _lowest(x.dtype))
        top, left, bottom, right = inside
        out = np.ascontiguousarray(out[:, top:bottom, left:right]).reshape(x.shape)
        return rounded(out) if half else out

    return {"max_pool2d": max_pool2d, "max_pool2d_backward": max_pool2d_backward}


__all__ = ["build"]
