"""The CPU's ``to_dtype`` into bfloat16 from float32 as one vectorized numba pass (``bfloat16_loops``).

The CPU computes bfloat16 in float32 (``dtypes.STORAGE_ONLY``): each kernel call widens its bfloat16 operands
and rounds its results back through this kernel, and autocast casts weights and activations with it, so
every conversion is on the hot path of bfloat16 work. ml_dtypes' ``astype`` to bfloat16 rounds one element
at a time (about 1.1 ns each, against 0.2-0.45 ns for the loop, memory-bound); the results are the same
(round to nearest, ties to even; NaN as ml_dtypes makes it). Its widening to float32 is already as fast as
a copy, and stays. The result keeps the input's memory order, as ``astype`` does. Small arrays (below
``LOOP_MIN_SIZE``, where the loop's call costs more than it saves), inputs whose elements do not fill one
block (sliced views), and every other pair of dtypes take the shared kernel, as does everything without
numba.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import bfloat16

from . import fusion
from .dtypes import NUMPY_DTYPE

_BFLOAT16, _FLOAT32, _BOOL = NUMPY_DTYPE[bfloat16], np.dtype(np.float32), np.dtype(np.bool_)
_ONE = np.uint16(0x3F80)  # 1.0 in bfloat16

#: From this many elements on, the loop rounds faster than ml_dtypes (measured, min of 7 x 200 calls: 1024
#: elements 2.6 against 1.5 us, 4096: 3.2 against 3.9 us, 16384: 5.9 against 13 us)
LOOP_MIN_SIZE = 2048

_loops = fusion.imported_on_first_call("bfloat16_loops")


def _memory_order(a: np.ndarray) -> tuple | None:
    """The axes of ``a`` from outermost to innermost in memory, if its elements fill one block without gaps
    (any C-contiguous array transposed); None otherwise."""
    order = tuple(sorted(range(a.ndim), key=lambda axis: -a.strides[axis]))
    return order if a.transpose(order).flags.c_contiguous else None


def to_bfloat16(a: np.ndarray) -> np.ndarray | None:
    """float32 ``a`` rounded to bfloat16 by the loop, laid out as ``a``; None where ``a`` is not one block."""
    if a.flags.c_contiguous:
        out = np.empty(a.shape, _BFLOAT16)
        _loops().round_to_bfloat16(a.reshape(-1), out.reshape(-1).view(np.uint16))
        return out
    order = _memory_order(a)
    if order is None:
        return None
    return to_bfloat16(a.transpose(order)).transpose(np.argsort(order))


def rounded(a: np.ndarray) -> np.ndarray:
    """float32 ``a`` rounded to bfloat16, by whichever of the loop and ml_dtypes is faster for it."""
    if a.size >= LOOP_MIN_SIZE:
        out = to_bfloat16(a)
        if out is not None:
            return out
    return a.astype(_BFLOAT16)


def build(numpy_kernels: dict) -> dict:
    """``{"to_dtype": ...}``: float32 (and bool) to bfloat16 through the loop, the rest through
    ``numpy_kernels``'; {} without numba."""
    if not fusion.numba_available():
        return {}
    shared = numpy_kernels["to_dtype"]

    def to_dtype(a, dtype):
        if dtype is bfloat16:
            if a.dtype == _FLOAT32:
                return rounded(a)
            if a.dtype == _BOOL:  # masks (dropout's): the bits of 0 and 1.0, 3x faster than ml_dtypes
                return (a.view(np.uint8).astype(np.uint16) * _ONE).view(_BFLOAT16)
        return shared(a, dtype)
    return {"to_dtype": to_dtype}


__all__ = ["LOOP_MIN_SIZE", "build", "rounded", "to_bfloat16"]
