"""NumPy as the shared array kernels see it: SciPy's special functions, ml_dtypes' bfloat16, NumPy's strides."""
from __future__ import annotations

import warnings

import numpy as np
from scipy import special

from ember.backends.arraykernels import ArrayLib
from ember.dispatch import bfloat16, erf_float32

from .dtypes import LOW_PRECISION, NUMPY_DTYPE
from .scatter import add_at

_BFLOAT16 = NUMPY_DTYPE[bfloat16]
_stride_tricks = np.lib.stride_tricks

# Floating-point exceptions (log(0), 0/0) give inf/NaN as in PyTorch, without NumPy warnings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.backends\.(cpu|arraykernels)")


def _reshape_view(a: np.ndarray, size):
    """``a`` reshaped without copying: ``ndarray.reshape`` views whenever the strides allow (a quarter of
    ``np.reshape(copy=False)``'s cost); a result that owns its memory was a copy, which a view must not be."""
    out = a.reshape(size)
    if out.base is None:
        raise ValueError(f"cannot view an array of shape {a.shape} and strides {a.strides} as shape {tuple(size)}")
    return out


def _weak(a, b):
    """The operands as NumPy should see them. A Python float (on either side: the fast path passes them
    through) is a weak scalar that takes the array's dtype, but ml_dtypes' bfloat16 does not implement
    that (it answers in float32), so cast the number to bfloat16 here, as PyTorch does."""
    if b.__class__ is float and getattr(a, "dtype", None) is _BFLOAT16:
        return a, _BFLOAT16.type(b)
    if a.__class__ is float and getattr(b, "dtype", None) is _BFLOAT16:
        return _BFLOAT16.type(a), b
    return a, b


def _as_strided(a, shape, strides, writeable):
    # A contiguous array exports its memory as a buffer, and ndarray() over it is a C-level view (it also checks
    # that the strides stay inside the buffer): about 0.3 µs against 2.5 µs for NumPy's Python-level as_strided,
    # which expand (in every sum's backward) and the pooling windows go through.
    try:
        out = np.ndarray(shape, a.dtype, a, 0, strides)
    except (TypeError, ValueError):  # not contiguous, or windows that NumPy cannot check against the buffer
        return _stride_tricks.as_strided(a, shape=shape, strides=strides, writeable=writeable)
    if not writeable and out.flags.writeable:
        out.flags.writeable = False
    return out


def _sliding_window_view(a, window_shape, axis, writeable=False):
    return _stride_tricks.sliding_window_view(a, window_shape, axis=axis, writeable=writeable)


def _quiet():
    return np.errstate(all="ignore")


#: float32 arrays from this size on take ember.dispatch.fast_erf's NumPy passes: 3.8x faster than SciPy's erf
#: on (64, 32, 192); below it, their ~30 ufunc calls cost more than SciPy's ~15 ns an element (measured: even
#: at 6000 elements)
FAST_ERF_MIN_SIZE = 8192


def _erf(a, out=None):
    """SciPy's erf ufunc, or the branch-free float32 form for large float32 arrays (within 7 ulp)."""
    if a.dtype == np.float32 and a.size >= FAST_ERF_MIN_SIZE:
        return erf_float32(a)
    return special.erf(a, out=out)


NUMPY = ArrayLib(
    name="numpy",
    xp=np,
    dtypes=NUMPY_DTYPE,
    low_precision=LOW_PRECISION,
    widen_for_matmul=LOW_PRECISION,  # NumPy's BLAS has no half-precision GEMM
    array_out=...,
    erf=_erf,
    expit=special.expit,
    add_at=add_at,  # a numba loop for whole rows (embedding gradients), np.add.at otherwise
    as_strided=_as_strided,
    sliding_window_view=_sliding_window_view,
    argsort_stable=lambda a, axis: np.argsort(a, axis=axis, kind="stable"),
    reshape_view=_reshape_view,
    sum_reduce=np.add.reduce,  # the ufunc method skips np.sum's Python-level dispatch
    prod_reduce=np.multiply.reduce,
    max_reduce=np.maximum.reduce,  # NaN-propagating like np.max, without its Python-level dispatch
    min_reduce=np.minimum.reduce,
    quiet=_quiet,
    weak_scalar=_weak,
)
