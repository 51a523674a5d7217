"""Elementwise kernels: NumPy ufuncs, always returning arrays (``out=...``), never NumPy scalars."""
from __future__ import annotations

import warnings

import numpy as np
from scipy import special

from ..dtypes import LOW_PRECISION, NUMPY_DTYPE
from ember.dispatch.dtypes import bfloat16

_BFLOAT16 = NUMPY_DTYPE[bfloat16]

# Floating-point exceptions (log(0), 0/0) give inf/NaN as in PyTorch, without NumPy warnings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.backends\.cpu")


def _unary(ufunc):
    return lambda a: ufunc(a, out=...)


def _in_kind(ufunc):
    """A ufunc without a half-precision loop (SciPy's) computes in float32 and answers in the input dtype."""
    def kernel(a):
        if a.dtype in LOW_PRECISION:
            return ufunc(a.astype(np.float32)).astype(a.dtype)
        return ufunc(a, out=...)
    return kernel


def _weak(a, b):
    """The operands as NumPy should see them. A Python float (on either side: the fast path passes them
    through) is a weak scalar that takes the array's dtype, but ml_dtypes' bfloat16 does not implement
    that (it answers in float32), so cast the number to bfloat16 here, as PyTorch does."""
    if b.__class__ is float and getattr(a, "dtype", None) is _BFLOAT16:
        return a, _BFLOAT16.type(b)
    if a.__class__ is float and getattr(b, "dtype", None) is _BFLOAT16:
        return _BFLOAT16.type(a), b
    return a, b


def _binary(ufunc):
    def kernel(a, b):
        if a.__class__ is float or b.__class__ is float:
            a, b = _weak(a, b)
        return ufunc(a, b, out=...)
    return kernel


def _integral(a) -> bool:
    """Integer or bool: arrays by dtype, Python numbers (which the fast path passes through) by type."""
    dtype = getattr(a, "dtype", None)
    return dtype.kind in "iub" if dtype is not None else isinstance(a, int)


def _floor(a):
    return a.copy() if _integral(a) else np.floor(a, out=...)


def _ceil(a):
    return a.copy() if _integral(a) else np.ceil(a, out=...)


def _round(a, decimals):
    if _integral(a) and decimals >= 0:
        return a.copy()
    return np.asarray(np.round(a, decimals))


def _sign(a):
    return np.sign(a, out=...)


def _erf(a):
    return special.erf(a, out=...) if a.dtype.itemsize >= 4 else special.erf(a.astype(np.float32)).astype(a.dtype)


def _scaled(b, alpha):
    """alpha * b in b's dtype; integer alphas wrap into it (alpha=-1 on uint8 multiplies by 255)."""
    if b.dtype.kind in "iu":
        alpha = np.array(alpha).astype(b.dtype)
    return np.multiply(b, alpha, out=...).astype(b.dtype, copy=False)


def _add(a, b, alpha):
    a, b = _weak(a, b)
    if alpha == 1:
        return np.add(a, b, out=...)
    return np.add(a, _scaled(b, alpha), out=...)


def _sub(a, b, alpha):
    a, b = _weak(a, b)
    if alpha == 1:
        return np.subtract(a, b, out=...)
    return np.subtract(a, _scaled(b, alpha), out=...)


def _check_integer_divisor(op, b):
    if _integral(b) and not np.all(b):
        raise ZeroDivisionError(f"{op}: integer division by zero")


def _div(a, b, rounding_mode):
    a, b = _weak(a, b)
    if rounding_mode is None:
        return np.true_divide(a, b, out=...)
    if rounding_mode == "floor":
        _check_integer_divisor("div", b)
        return np.floor_divide(a, b, out=...)
    if _integral(a):
        _check_integer_divisor("div", b)
        quotient = np.floor_divide(a, b, out=...)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return np.add(quotient, fix.astype(quotient.dtype), out=...)
    return np.trunc(np.true_divide(a, b), out=...)


def _floor_divide(a, b):
    a, b = _weak(a, b)
    _check_integer_divisor("floor_divide", b)
    return np.floor_divide(a, b, out=...)


def _remainder(a, b):
    a, b = _weak(a, b)
    _check_integer_divisor("remainder", b)
    return np.remainder(a, b, out=...)


def _pow(a, b):
    a, b = _weak(a, b)
    if _integral(b) and _integral(a) and np.any(b < 0):
        raise ValueError("pow: integers to negative integer powers are not allowed")
    return np.power(a, b, out=...)


def _where(condition, a, b):
    return np.asarray(np.where(condition, a, b))


KERNELS = {
    "neg": _unary(np.negative), "abs": _unary(np.abs), "sign": _sign,
    "exp": _unary(np.exp), "expm1": _unary(np.expm1), "log": _unary(np.log), "log1p": _unary(np.log1p),
    "sqrt": _unary(np.sqrt), "sin": _unary(np.sin), "cos": _unary(np.cos), "tan": _unary(np.tan),
    "tanh": _unary(np.tanh), "erf": _erf, "floor": _floor, "ceil": _ceil, "round": _round,
    "logical_not": _unary(np.logical_not), "isnan": _unary(np.isnan),
    "add": _add, "sub": _sub, "mul": _binary(np.multiply), "div": _div, "floor_divide": _floor_divide,
    "remainder": _remainder, "pow": _pow, "maximum": _binary(np.maximum), "minimum": _binary(np.minimum),
    "eq": _binary(np.equal), "ne": _binary(np.not_equal), "lt": _binary(np.less), "le": _binary(np.less_equal),
    "gt": _binary(np.greater), "ge": _binary(np.greater_equal),
    "logical_and": _binary(np.logical_and), "logical_or": _binary(np.logical_or),
    "logical_xor": _binary(np.logical_xor), "where": _where,
    # composites the CPU runs faster as one ufunc
    "reciprocal": _unary(np.reciprocal), "sigmoid": _in_kind(special.expit),
    "isinf": _unary(np.isinf), "isfinite": _unary(np.isfinite), "log2": _unary(np.log2),
}
