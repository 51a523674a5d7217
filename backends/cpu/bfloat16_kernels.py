"""The CPU kernels' own forms for bfloat16 calls, which the dispatcher runs instead of widening to float32.

The CPU computes bfloat16 in float32 (``dtypes.STORAGE_ONLY``): a call reading or making it widens its
operands, runs the float32 kernel and rounds the results, two or three extra passes over the data. Where
that is wasted, a kernel carries ``for_storage_dtypes`` (``ember.dispatch.execution.storage_dtypes``), given
that float32 road and returning the kernel the plan runs:

- kernels that only move or select elements run on bfloat16 as stored (NumPy copies ml_dtypes' 2-byte
  elements like any other), which is what the CPU did before bfloat16 became storage-only; full and ones
  fill the value's bits;
- add, sub, mul, div, relu and threshold_backward on C-contiguous operands of one shape, or with a Python
  number, run ``bfloat16_loops``' one-pass loops, computing in float32 and rounding once, as the float32
  road does (the same results, bit for bit); sum reads bfloat16 and adds in float32 where it reduces the
  dims around one block of kept dims (bias gradients). Other calls (broadcasting, strided views) take the
  float32 road;
- max pooling and its backward run their own loops on bfloat16's bits (``pool_kernels``).

Measured on the autocast transformer step (batch 16 x 64, d 128, 2 layers): these forms remove 25 of the
41 million elements that its kernel calls converted between float32 and bfloat16 a step (dropout and
residual arithmetic 13, cat, clone and full 8, bias sums 2).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ember.dispatch import bfloat16, float32

from . import fusion
from .bfloat16_casts import rounded
from .dtypes import NUMPY_DTYPE

_BFLOAT16 = NUMPY_DTYPE[bfloat16]
_ONE = np.uint16(0x3F80)  # 1.0 in bfloat16
_NUMBERS = (float, int, bool)

_loops = fusion.imported_on_first_call("bfloat16_loops")

#: kernels whose results are elements of their operands (or nothing yet): exact in any dtype NumPy holds
MOVES_ELEMENTS = ("cat", "clone", "empty", "flip", "gather", "index", "index_select", "pad", "roll", "scatter",
                  "stack", "tril", "triu", "where", "zeros")


#: kernels with loops of their own that read bfloat16's bits (``pool_kernels``)
READ_AS_STORED = ("max_pool2d", "max_pool2d_backward")


def _stored(a) -> bool:
    """Whether ``a`` is a bfloat16 array the loops read as it is: C-contiguous and not empty."""
    return a.__class__ is np.ndarray and a.dtype == _BFLOAT16 and a.flags.c_contiguous and a.size > 0


def _bits(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint16)


def _run(loop: str, shape: tuple, *operands) -> np.ndarray:
    """A new bfloat16 array of ``shape`` written by loop ``loop`` from ``operands`` (arrays as flat bits)."""
    out = np.empty(shape, _BFLOAT16)
    getattr(_loops(), loop)(*(_bits(v) if v.__class__ is np.ndarray else v for v in operands), _bits(out))
    return out


def _pair(a, b) -> bool:
    return _stored(a) and _stored(b) and a.shape == b.shape


def _add(sign: int) -> Callable:
    """add (sign 1) or sub (sign -1): ``a + sign * alpha * b``."""
    def for_storage_dtypes(widened: Callable) -> Callable:
        def kernel(a, b, alpha):
            if _pair(a, b):
                return _run("add", a.shape, a, b, np.float32(sign * alpha))
            if alpha == 1 and b.__class__ in _NUMBERS and _stored(a):
                return _run("add_number", a.shape, a, np.float32(sign * b))
            return widened(a, b, alpha)
        return kernel
    return for_storage_dtypes


def _mul(widened: Callable) -> Callable:
    def kernel(a, b):
        if _pair(a, b):
            return _run("mul", a.shape, a, b)
        if b.__class__ in _NUMBERS and _stored(a):
            return _run("mul_number", a.shape, a, np.float32(b))
        if a.__class__ in _NUMBERS and _stored(b):
            return _run("mul_number", b.shape, b, np.float32(a))
        return widened(a, b)
    return kernel


def _div(widened: Callable) -> Callable:
    def kernel(a, b, rounding_mode):
        if rounding_mode is None:
            if _pair(a, b):
                return _run("div", a.shape, a, b)
            if b.__class__ in _NUMBERS and _stored(a):
                return _run("div_number", a.shape, a, np.float32(b))
        return widened(a, b, rounding_mode)
    return kernel


def _relu(widened: Callable) -> Callable:
    def kernel(a):
        return _run("relu", a.shape, a) if _stored(a) else widened(a)
    return kernel


def _threshold_backward(widened: Callable) -> Callable:
    def kernel(grad, a, threshold):
        if _pair(grad, a):
            return _run("threshold_backward", a.shape, grad, a, np.float32(threshold))
        return widened(grad, a, threshold)
    return kernel


def _kept_block(shape: tuple, dim) -> tuple | None:
    """``(outer, kept, inner)`` element counts where the dims ``dim`` reduces are the leading and trailing ones
    around one block of kept dims (the whole array is reduced around an empty block); None otherwise."""
    reduced = _reduced(len(shape), dim)
    kept = [d for d in range(len(shape)) if d not in reduced]
    if not reduced or (kept and kept != list(range(kept[0], kept[-1] + 1))):
        return None
    start, stop = (kept[0], kept[-1] + 1) if kept else (0, 0)
    return math.prod(shape[:start]), math.prod(shape[start:stop]), math.prod(shape[stop:])


def _reduced(ndim: int, dim) -> set:
    if dim is None:
        return set(range(ndim))
    return {d % ndim for d in ((dim,) if isinstance(dim, int) else dim)}


def _sum(widened: Callable) -> Callable:
    """sum's own form: a loop reading bfloat16 and adding in float32, for reductions around one block of kept
    dims (the bias gradients of linear and convolution layers)."""
    def kernel(a, dim, keepdim, dtype=None):
        block = _kept_block(a.shape, dim) if _stored(a) and a.ndim and dtype in (None, bfloat16, float32) else None
        if block is None:
            return widened(a, dim, keepdim, dtype)
        outer, kept, inner = block
        out = np.empty(kept, np.float32)
        if inner == 1:
            _loops().sum_rows(_bits(a).reshape(outer, kept), out)
        else:
            _loops().sum_around(_bits(a).reshape(outer, kept, inner), out)
        reduced = _reduced(a.ndim, dim)
        shape = tuple(1 if d in reduced else n for d, n in enumerate(a.shape) if keepdim or d not in reduced)
        out = out.reshape(shape)
        return out if dtype is float32 else rounded(out)
    return kernel


def _filled(size, bits) -> np.ndarray:
    """A bfloat16 array of ``size`` holding ``bits`` everywhere, filled as uint16 (NumPy fills ml_dtypes'
    bfloat16 element by element, 5x slower)."""
    return np.full(size, bits, np.uint16).view(_BFLOAT16)


def _full(kernel: Callable) -> Callable:
    """full's own form: the value converted once by ``kernel``, then filled."""
    def for_storage_dtypes(widened: Callable) -> Callable:
        def full(size, value, dtype, device):
            return _filled(size, kernel((), value, dtype, device).view(np.uint16)[()])
        return full
    return for_storage_dtypes


def _ones(widened: Callable) -> Callable:
    return lambda size, dtype, device: _filled(size, _ONE)


ARITHMETIC = {"add": _add(1), "sub": _add(-1), "mul": _mul, "div": _div, "relu": _relu,
              "threshold_backward": _threshold_backward, "sum": _sum}


def attach(kernels: dict) -> None:
    """Give ``kernels``' entries their bfloat16 forms (the loops' only where numba is installed); an op the
    table has no kernel for keeps the dispatcher's way."""
    forms = {name: _as_stored for name in MOVES_ELEMENTS}
    forms.update(full=_full, ones=lambda kernel: _ones)
    if fusion.numba_available():
        forms.update({name: (lambda kernel, form=form: form) for name, form in ARITHMETIC.items()})
        forms.update({name: _as_stored for name in READ_AS_STORED})
    for name, form in forms.items():
        kernel = kernels.get(name)
        if kernel is not None:
            kernel.for_storage_dtypes = form(kernel)


def _as_stored(kernel: Callable) -> Callable:
    """The form of a kernel that takes bfloat16 as it is: the kernel itself, whatever the float32 road."""
    return lambda widened: kernel


__all__ = ["ARITHMETIC", "MOVES_ELEMENTS", "READ_AS_STORED", "attach"]
