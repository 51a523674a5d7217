"""ArrayLib: what a NumPy-compatible array library needs to say about itself for the shared kernels.

The shared kernels are written once against ``xp`` (the NumPy API as NumPy and CuPy both spell it).
The few places where the libraries differ are named here, as plain attributes chosen when the
backend builds its kernels, so that no kernel pays a per-call lookup or branch for them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, ContextManager


@dataclass(frozen=True)
class ArrayLib:
    """One array library, as the kernel factory sees it.

    ``xp`` is the array module (``numpy`` or ``cupy``); dtypes are NumPy dtype objects in both.
    Host-side metadata (window sizes, divisors, limits) is always computed with NumPy and moved
    with ``xp.asarray``, which is free when ``xp`` is NumPy.
    """

    name: str
    xp: ModuleType
    #: Ember dtype -> the library's dtype, for every dtype the library can hold
    dtypes: dict
    #: dtypes that compute in float32 and round once at the end (no fast half-precision loops)
    low_precision: frozenset
    #: dtypes whose matmul also goes through float32 (NumPy has no half-precision BLAS; cuBLAS does)
    widen_for_matmul: frozenset
    #: what to pass as a ufunc's ``out=`` so that 0-d input gives a 0-d array, not a scalar: NumPy's
    #: ``...``; None (the default) where ufuncs always return arrays (CuPy)
    array_out: Any
    #: ``erf`` and ``expit`` ufuncs (scipy.special or cupyx.scipy.special)
    erf: Callable
    expit: Callable
    #: ``add_at(a, key, values)``: unbuffered ``a[key] += values`` that accumulates repeated indices
    add_at: Callable
    #: ``as_strided(a, shape, strides, writeable)`` with byte strides: a view of a's memory
    as_strided: Callable
    #: ``sliding_window_view(a, window_shape, axis, writeable)``
    sliding_window_view: Callable
    #: ``argsort_stable(a, axis)``: stable ascending argsort with NaN last
    argsort_stable: Callable
    #: ``reshape_view(a, shape)``: a view with the new shape, raising ValueError if that needs a copy
    reshape_view: Callable
    #: ``sum_reduce`` / ``prod_reduce(a, axis=, keepdims=, dtype=)``: the cheapest full-featured reductions
    sum_reduce: Callable
    prod_reduce: Callable
    #: a context manager that silences floating-point warnings (a no-op where there are none)
    quiet: Callable[[], ContextManager]
    #: ``weak_scalar(a, b)``: the operands of a binary ufunc where one may be a Python float standing
    #: for the array's own dtype (the dispatcher's fast path passes numbers only in that case); None
    #: where the library's ufuncs already treat Python numbers so for every dtype it holds
    weak_scalar: Callable | None
    #: ``max_reduce`` / ``min_reduce(a, axis=, keepdims=)``: the cheapest extremum reductions (None: ``xp.max``/``xp.min``)
    max_reduce: Callable | None = None
    min_reduce: Callable | None = None
    #: choices of algorithm, not of API: ``topk_by_sort`` (topk as a stable sort and a slice, for libraries
    #: whose partition sorts anyway)
    extra: dict[str, Any] = field(default_factory=dict)


def strided_windows(as_strided: Callable) -> Callable:
    """sliding_window_view built on ``as_strided``: window dims appended, the windowed axes trimmed.

    Used by libraries whose own version checks its arguments on the device (a synchronisation).
    """
    def sliding_window_view(a, window_shape, axis, writeable=False):
        shape = tuple(window_shape) if isinstance(window_shape, (tuple, list)) else (window_shape,)
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(ax % a.ndim for ax in axes)
        trimmed = list(a.shape)
        for ax, size in zip(axes, shape):
            trimmed[ax] -= size - 1
        strides = tuple(a.strides) + tuple(a.strides[ax] for ax in axes)
        return as_strided(a, tuple(trimmed) + shape, strides, writeable)
    return sliding_window_view
