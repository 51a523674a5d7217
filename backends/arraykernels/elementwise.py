"""Elementwise kernels: ufuncs that always return arrays, never scalars."""
from __future__ import annotations

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    low = lib.low_precision
    weak = lib.weak_scalar
    OUT = lib.array_out  # noqa: N806  (out=OUT: an array even for 0-d input)
    # bound once: a closure variable is cheaper per call than xp.<name> (tens of ns on 10-element adds)
    add, subtract, multiply, true_divide = xp.add, xp.subtract, xp.multiply, xp.true_divide
    floor_divide, remainder, power = xp.floor_divide, xp.remainder, xp.power

    def _unary(ufunc):
        return lambda a: ufunc(a, out=OUT)

    def _in_kind(ufunc):
        """A ufunc without a half-precision loop (SciPy's) computes in float32 and answers in the input dtype."""
        def kernel(a):
            if a.dtype in low:
                return ufunc(a.astype(np.float32)).astype(a.dtype)
            return ufunc(a, out=OUT)
        return kernel

    if weak is None:
        def _binary(ufunc):
            return lambda a, b: ufunc(a, b, out=OUT)

        def _operands(a, b):
            return a, b
    else:
        def _binary(ufunc):
            def kernel(a, b):
                if a.__class__ is float or b.__class__ is float:
                    a, b = weak(a, b)
                return ufunc(a, b, out=OUT)
            return kernel

        _operands = weak

    def _integral(a) -> bool:
        """Integer or bool: arrays by dtype, Python numbers (which the fast path passes through) by type."""
        dtype = getattr(a, "dtype", None)
        return dtype.kind in "iub" if dtype is not None else isinstance(a, int)

    def _has_zero(b) -> bool:
        return b == 0 if isinstance(b, (int, float)) else not bool(xp.all(b))

    def _has_negative(b) -> bool:
        return b < 0 if isinstance(b, (int, float)) else bool(xp.any(b < 0))

    def _floor(a):
        return a.copy() if _integral(a) else xp.floor(a, out=OUT)

    def _ceil(a):
        return a.copy() if _integral(a) else xp.ceil(a, out=OUT)

    def _round(a, decimals):
        if _integral(a) and decimals >= 0:
            return a.copy()
        return xp.asarray(xp.round(a, decimals))

    erf = lib.erf

    def _erf(a):
        return erf(a, out=OUT) if a.dtype.itemsize >= 4 else erf(a.astype(np.float32)).astype(a.dtype)

    def _scaled(b, alpha):
        """alpha * b in b's dtype; integer alphas wrap into it (alpha=-1 on uint8 multiplies by 255)."""
        if b.dtype.kind in "iu":
            alpha = np.array(alpha).astype(b.dtype)[()]
        return multiply(b, alpha, out=OUT).astype(b.dtype, copy=False)

    def _add(a, b, alpha):
        a, b = _operands(a, b)
        if alpha == 1:
            return add(a, b, out=OUT)
        return add(a, _scaled(b, alpha), out=OUT)

    def _sub(a, b, alpha):
        a, b = _operands(a, b)
        if alpha == 1:
            return subtract(a, b, out=OUT)
        return subtract(a, _scaled(b, alpha), out=OUT)

    def _check_integer_divisor(op, a, b):
        """Division by zero is an error only where it divides integers: a float tensor by the number 0 is inf."""
        if _integral(a) and _integral(b) and _has_zero(b):
            raise ZeroDivisionError(f"{op}: integer division by zero")

    def _div(a, b, rounding_mode):
        a, b = _operands(a, b)
        if rounding_mode is None:
            return true_divide(a, b, out=OUT)
        if rounding_mode == "floor":
            _check_integer_divisor("div", a, b)
            return floor_divide(a, b, out=OUT)
        if _integral(a):
            _check_integer_divisor("div", a, b)
            quotient = floor_divide(a, b, out=OUT)
            fix = (xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            return add(quotient, fix.astype(quotient.dtype), out=OUT)
        return xp.trunc(xp.true_divide(a, b), out=OUT)

    def _floor_divide(a, b):
        a, b = _operands(a, b)
        _check_integer_divisor("floor_divide", a, b)
        return floor_divide(a, b, out=OUT)

    def _remainder(a, b):
        a, b = _operands(a, b)
        _check_integer_divisor("remainder", a, b)
        return remainder(a, b, out=OUT)

    def _pow(a, b):
        a, b = _operands(a, b)
        if _integral(b) and _integral(a) and _has_negative(b):
            raise ValueError("pow: integers to negative integer powers are not allowed")
        return power(a, b, out=OUT)

    def _where(condition, a, b):
        return xp.asarray(xp.where(condition, a, b))

    return {
        "neg": _unary(xp.negative), "abs": _unary(xp.abs), "sign": _unary(xp.sign),
        "exp": _unary(xp.exp), "expm1": _unary(xp.expm1), "log": _unary(xp.log), "log1p": _unary(xp.log1p),
        "sqrt": _unary(xp.sqrt), "sin": _unary(xp.sin), "cos": _unary(xp.cos), "tan": _unary(xp.tan),
        "tanh": _unary(xp.tanh), "erf": _erf, "floor": _floor, "ceil": _ceil, "round": _round,
        "logical_not": _unary(xp.logical_not), "isnan": _unary(xp.isnan),
        "add": _add, "sub": _sub, "mul": _binary(xp.multiply), "div": _div, "floor_divide": _floor_divide,
        "remainder": _remainder, "pow": _pow, "maximum": _binary(xp.maximum), "minimum": _binary(xp.minimum),
        "eq": _binary(xp.equal), "ne": _binary(xp.not_equal), "lt": _binary(xp.less),
        "le": _binary(xp.less_equal), "gt": _binary(xp.greater), "ge": _binary(xp.greater_equal),
        "logical_and": _binary(xp.logical_and), "logical_or": _binary(xp.logical_or),
        "logical_xor": _binary(xp.logical_xor), "where": _where,
        # composites that run faster as one ufunc
        "reciprocal": _unary(xp.reciprocal), "sigmoid": _in_kind(lib.expit),
        "isinf": _unary(xp.isinf), "isfinite": _unary(xp.isfinite), "log2": _unary(xp.log2),
        **_math_composites(xp, _in_kind, _binary, _operands, _integral),
    }


def _math_composites(xp, in_kind, binary, operands, integral) -> dict:
    """Composites of core/dispatch/ops (trigonometric, rounding, bitwise) as the array library's own functions."""
    def binary_in_kind(ufunc):
        """A binary float function: half precision computes in float32 and answers in the input dtype."""
        def kernel(a, b):
            a, b = operands(a, b)
            dtype = getattr(a, "dtype", None) or b.dtype
            if dtype.itemsize == 2:
                return xp.asarray(ufunc(xp.asarray(a, np.float32), xp.asarray(b, np.float32))).astype(dtype)
            return xp.asarray(ufunc(a, b))
        return kernel

    def trunc(a):
        return a.copy() if integral(a) else xp.trunc(a)

    return {
        "asin": in_kind(xp.arcsin), "acos": in_kind(xp.arccos), "atan": in_kind(xp.arctan),
        "sinh": in_kind(xp.sinh), "cosh": in_kind(xp.cosh), "asinh": in_kind(xp.arcsinh),
        "acosh": in_kind(xp.arccosh), "atanh": in_kind(xp.arctanh), "log10": in_kind(xp.log10), "trunc": trunc,
        "atan2": binary_in_kind(xp.arctan2), "hypot": binary_in_kind(xp.hypot),
        "copysign": binary_in_kind(xp.copysign),
        "bitwise_and": binary(xp.bitwise_and), "bitwise_or": binary(xp.bitwise_or),
        "bitwise_xor": binary(xp.bitwise_xor), "bitwise_not": lambda a: xp.asarray(xp.invert(a)),
        "gcd": binary(xp.gcd), "lcm": binary(xp.lcm),
    }
