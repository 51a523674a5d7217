"""The numba loop of the CPU's embedding backward: each looked-up row's gradient added into its row of the
table's gradient, in one pass. Imported on the first call (importing numba takes a while); ``cache=True``:
later processes load the machine code instead of compiling it.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def scatter_rows(out, indices, grad, padding_idx, scale_by_frequency):
    """``out[indices[i]] += grad[i] * scale`` for each i in order, ``out`` zeroed by the caller: no row for the
    ``padding_idx`` row (-1: none), ``scale`` 1 / how often the index occurs where ``scale_by_frequency``, else
    1. A negative index counts from the end, as an ``index`` op's does. Returns the position of the first index
    outside ``out``'s rows (then nothing is added), or -1."""
    rows, width = out.shape
    counts = np.zeros(rows if scale_by_frequency else 0, np.int64)
    for i in range(indices.shape[0]):
        r = indices[i]
        if r < -rows or r >= rows:
            return i
        if scale_by_frequency:
            counts[r + rows if r < 0 else r] += 1
    for i in range(indices.shape[0]):
        r = indices[i]
        if r < 0:
            r += rows
        if r == padding_idx:
            continue
        if scale_by_frequency:
            scale = 1.0 / counts[r]
            for j in range(width):
                out[r, j] += grad[i, j] * scale
        else:
            for j in range(width):
                out[r, j] += grad[i, j]
    return -1
