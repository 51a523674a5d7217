"""CuPy as the shared array kernels see it: cupyx's special functions and scatter-add, CUB-backed sorts.

Built at run time from the imported ``cupy`` module (never imported when Ember is).
"""
from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Callable

import numpy as np

from ember.backends.arraykernels import ArrayLib, strided_windows
from ember.dispatch import dtypes as d

_BASE_DTYPES = {
    d.bool_: np.dtype(np.bool_), d.uint8: np.dtype(np.uint8), d.int8: np.dtype(np.int8),
    d.int16: np.dtype(np.int16), d.int32: np.dtype(np.int32), d.int64: np.dtype(np.int64),
    d.float16: np.dtype(np.float16), d.float32: np.dtype(np.float32), d.float64: np.dtype(np.float64),
    d.complex64: np.dtype(np.complex64), d.complex128: np.dtype(np.complex128),  # CuPy's complex<float>/<double>
}


#: float32 values bfloat16 holds exactly (signed zero, infinity, a power of two, a 7-bit mantissa)
_BFLOAT16_PROBE = np.array([1.0, -2.5, 0.15625, -0.0, np.inf, 3.3895313892515355e38], np.float32)


def bfloat16_dtype(xp: ModuleType, to_host: Callable = np.asarray):
    """ml_dtypes' bfloat16 if the array library ``xp`` can hold it, else None.

    The backend stores bfloat16 and computes it in float32 (``CudaBackend.storage_only_dtypes``), so what
    must work is what that needs: allocating, converting exactly to and from float32, and copying a strided
    view. A probe decides rather than a version check, so a CuPy that learns it is used without a change here.
    """
    try:
        import ml_dtypes
        bf16 = np.dtype(ml_dtypes.bfloat16)
        stored = xp.asarray(_BFLOAT16_PROBE).astype(bf16)
        copied = xp.empty(_BFLOAT16_PROBE.size, dtype=bf16)
        copied[...] = stored[::-1]
        back = to_host(copied.astype(np.float32))
    except Exception:
        return None
    expected = _BFLOAT16_PROBE[::-1]
    return bf16 if np.array_equal(back, expected) and np.array_equal(np.signbit(back), np.signbit(expected)) else None


#: dtypes CUDA has an atomicAdd for (CuPy's scatter_add supports these); the others accumulate in a wider copy
_ATOMIC = frozenset(np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
                                          np.float64))


def scatter_adder(cupyx) -> Callable:
    """``add_at(a, key, values)``: cupyx.scatter_add, through a wider copy for the dtypes without an atomicAdd
    (``accumulating_dtype``); summing wide and casting back wraps exactly as adding narrow would. Complex arrays
    add their real and imaginary parts (views) one after the other."""
    def add_at(a, key, values):
        if a.dtype.kind == "c":
            add_at(a.real, key, values.real)
            add_at(a.imag, key, values.imag)
            return
        if a.dtype in _ATOMIC:
            cupyx.scatter_add(a, key, values)
            return
        wide_dtype = accumulating_dtype(a.dtype)
        wide = a.astype(wide_dtype)
        cupyx.scatter_add(wide, key, values.astype(wide_dtype) if hasattr(values, "astype") else values)
        a[...] = wide.astype(a.dtype) if a.dtype != np.bool_ else wide != 0
    return add_at


def accumulating_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a scatter-add into ``dtype`` accumulates in when CUDA has no atomicAdd of its width:
    int64 for bool and narrow integers, float32 for floating types (bfloat16, whose NumPy kind is 'V')."""
    return np.dtype(np.int64) if dtype.kind in "biu" else np.dtype(np.float32)


def stable_argsort(cupy) -> Callable:
    """CuPy's argsort is stable with NaN last, as NumPy's kind="stable"; bool sorts as uint8 (the same order)."""
    def argsort(a, axis):
        return cupy.argsort(a.view(np.uint8) if a.dtype == np.bool_ else a, axis=axis)
    return argsort


def cupy_library(cupy: ModuleType) -> ArrayLib:
    import cupyx
    import cupyx.scipy.special as special

    dtypes = dict(_BASE_DTYPES)
    bf16 = bfloat16_dtype(cupy, cupy.asnumpy)
    if bf16 is not None:
        dtypes[d.bfloat16] = bf16
    low = frozenset({np.dtype(np.float16)} | ({bf16} if bf16 is not None else set()))

    def as_strided(a, shape, strides, writeable):
        return cupy.lib.stride_tricks.as_strided(a, shape=tuple(shape), strides=tuple(strides))

    return ArrayLib(
        name="cupy",
        xp=cupy,
        dtypes=dtypes,
        low_precision=low,
        # cuBLAS multiplies float16 natively (float32 accumulation, tensor cores); bfloat16 goes through float32
        widen_for_matmul=low - {np.dtype(np.float16)},
        array_out=None,  # CuPy ufuncs return 0-d arrays, never scalars
        erf=special.erf,
        expit=special.expit,
        add_at=scatter_adder(cupyx),
        as_strided=as_strided,
        # CuPy's own sliding_window_view checks its arguments on the device (a synchronisation per call)
        sliding_window_view=strided_windows(as_strided),
        argsort_stable=stable_argsort(cupy),
        # the view op's meta already proved the view exists, and CuPy's reshape copies only when it must
        reshape_view=lambda a, size: a.reshape(size),
        sum_reduce=cupy.sum,
        prod_reduce=cupy.prod,
        quiet=contextlib.nullcontext,  # no floating-point warnings on the device
        weak_scalar=None,  # CuPy's ufuncs give a Python number the array's dtype (the fast path's only case)
        extra={"topk_by_sort": True},  # CuPy's partition sorts anyway
    )
