"""The CPU's ``conv_transpose2d`` (a convolution's input gradient) with col2im as one numba loop
(``conv_loops``), where numba is installed; the GEMM before it is the shared kernel's
(``ember.backends.arraykernels.conv.transposed_convolution``). Without numba, and for small batches, the
shared kernel's NumPy col2im runs: a strided add of each tap's plane onto a zeroed canvas.

Chosen by measurement (float32, 2 cores, min of 25, interleaved in one process). The col2im step alone at
(64, 32, 14, 14) to 16 channels, 3x3: NumPy 0.62 ms, numba 0.19 ms. The whole kernel, NumPy col2im / numba:
batch 64 of that shape 2.4 / 1.6 ms; (128, 64, 7, 7) to 64, 3x3: 6.0 / 4.3; (8, 32, 8, 8) to 3, 7x7 stride 2:
0.29 / 0.15; but batch 8 of the first shape 0.29 / 0.33, batch 4 0.20 / 0.26, batch 1 0.07 / 0.14: the loop's
inner dim is the batch, so below ``MIN_BATCH`` samples NumPy's whole-plane adds stay.
numba is imported on the first call, so that importing ember stays cheap.
"""
from __future__ import annotations

import numpy as np

from ember.backends.arraykernels.conv import add_taps, transposed_convolution

from . import fusion
from .library import NUMPY

MIN_BATCH = 16


_conv_loops = fusion.imported_on_first_call("conv_loops")


def _col2im(cols, stride, padding, dilation, size):
    """(groups, out_group, *size, batch) from the per-tap columns, in one gathering pass."""
    groups, _, _, out_group, _, _, batch = cols.shape
    if batch < MIN_BATCH:
        return add_taps(np, cols, stride, padding, dilation, size)
    out = np.empty((groups, out_group) + tuple(size) + (batch,), cols.dtype)
    _conv_loops().col2im(cols, *stride, *padding, *dilation, out)
    return out


def build(numpy_kernels: dict) -> dict:
    """``{"conv_transpose2d": ...}``: the shared kernel rebuilt around the loop (so ``numpy_kernels``, taken as
    the other builders take it, is not needed); {} without numba (the shared NumPy kernel stays)."""
    if not fusion.numba_available():
        return {}
    return {"conv_transpose2d": transposed_convolution(NUMPY, _col2im)}


__all__ = ["build", "MIN_BATCH"]
