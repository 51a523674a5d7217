"""Elementwise kernels: ufuncs that always return arrays, never scalars.

Most take ``out=``, a native array of the result's shape and dtype to write into (the backend's
``out_kernels``, found by ``out_kernels(table)``): an in-place call (``x.add_(y)``) then runs one ufunc
into x instead of a ufunc and a copy. Called without it, ``out`` is the library's ``array_out``, as before.
Where ``out`` is an input (``x.add_(x)``) every kernel reads an element before it writes it."""
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
        return writes_out(lambda a, out=OUT: ufunc(a, out=out))

    def _in_kind(ufunc):
        """A ufunc without a half-precision loop (SciPy's) computes in float32 and answers in the input dtype."""
        def kernel(a, out=OUT):
            if a.dtype in low:
                return _into(ufunc(a.astype(np.float32)).astype(a.dtype), out)
            return ufunc(a, out=out)
        return writes_out(kernel)

    def _into(result, out):
        """``result``, written into ``out`` where one is given (kernels whose result is computed apart)."""
        if out is OUT:
            return result
        xp.copyto(out, result, casting="unsafe")
        return out

    if weak is None:
        def _binary(ufunc):
            return writes_out(lambda a, b, out=OUT: ufunc(a, b, out=out))

        def _operands(a, b):
            return a, b
    else:
        def _binary(ufunc):
            def kernel(a, b, out=OUT):
                if a.__class__ is float or b.__class__ is float:
                    a, b = weak(a, b)
                return ufunc(a, b, out=out)
            return writes_out(kernel)

        _operands = weak

    def _integral(a) -> bool:
        """Integer or bool: arrays by dtype, Python numbers (which the fast path passes through) by type."""
        dtype = getattr(a, "dtype", None)
        return dtype.kind in "iub" if dtype is not None else isinstance(a, int)

    def _has_zero(b) -> bool:
        return b == 0 if isinstance(b, (int, float)) else not bool(xp.all(b))

    def _has_negative(b) -> bool:
        return b < 0 if isinstance(b, (int, float)) else bool(xp.any(b < 0))

    def _same(a, out):
        """The values of ``a`` as the result: a copy, or ``out`` holding them."""
        return a.copy() if out is OUT else _into(a, out)

    @writes_out
    def _floor(a, out=OUT):
        return _same(a, out) if _integral(a) else xp.floor(a, out=out)

    @writes_out
    def _ceil(a, out=OUT):
        return _same(a, out) if _integral(a) else xp.ceil(a, out=out)

    @writes_out
    def _round(a, decimals, out=OUT):
        if _integral(a) and decimals >= 0:
            return _same(a, out)
        return _into(xp.asarray(xp.round(a, decimals)), out)

    erf = lib.erf

    @writes_out
    def _erf(a, out=OUT):
        if a.dtype.itemsize < 4:
            return _into(erf(a.astype(np.float32)).astype(a.dtype), out)
        result = erf(a, out=out)  # (the CPU's fast float32 form answers in a fresh array)
        return result if result is out or out is OUT else _into(result, out)

    expit = _in_kind(lib.expit)

    @writes_out
    def _sigmoid(a, out=OUT):
        """SciPy's expit has no complex loop: complex takes 1 / (1 + exp(-z)), as PyTorch computes it."""
        if a.dtype.kind != "c":
            return expit(a, out=out)
        return xp.reciprocal(xp.exp(xp.negative(a)) + 1, out=out)

    @writes_out
    def _reciprocal(a, out=OUT):
        """1 / z for complex z (inf + NaN j at 0, as PyTorch): NumPy's reciprocal of 0j is NaN + NaN j."""
        return xp.reciprocal(a, out=out) if a.dtype.kind != "c" else true_divide(1, a, out=out)

    @writes_out
    def _log1p(a, out=OUT):
        return xp.log1p(a, out=out) if a.dtype.kind != "c" else _into(_complex_log1p(xp, a), out)

    def _scaled(b, alpha):
        """alpha * b in b's dtype; integer alphas wrap into it (alpha=-1 on uint8 multiplies by 255)."""
        if b.dtype.kind in "iu":
            alpha = np.array(alpha).astype(b.dtype)[()]
        return multiply(b, alpha, out=OUT).astype(b.dtype, copy=False)

    @writes_out
    def _add(a, b, alpha, out=OUT):
        a, b = _operands(a, b)
        if alpha == 1:
            return add(a, b, out=out)
        return add(a, _scaled(b, alpha), out=out)

    @writes_out
    def _sub(a, b, alpha, out=OUT):
        a, b = _operands(a, b)
        if alpha == 1:
            return subtract(a, b, out=out)
        return subtract(a, _scaled(b, alpha), out=out)

    def _check_integer_divisor(op, a, b):
        """Division by zero is an error only where it divides integers: a float tensor by the number 0 is inf."""
        if _integral(a) and _integral(b) and _has_zero(b):
            raise ZeroDivisionError(f"{op}: integer division by zero")

    @writes_out
    def _div(a, b, rounding_mode, out=OUT):
        a, b = _operands(a, b)
        if rounding_mode is None:
            return true_divide(a, b, out=out)
        if rounding_mode == "floor":
            _check_integer_divisor("div", a, b)
            return floor_divide(a, b, out=out)
        if _integral(a):
            _check_integer_divisor("div", a, b)
            fix = (xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))  # before ``out`` (maybe ``a``) is written
            quotient = floor_divide(a, b, out=out)
            return add(quotient, fix.astype(quotient.dtype), out=out)
        return xp.trunc(xp.true_divide(a, b), out=out)

    @writes_out
    def _floor_divide(a, b, out=OUT):
        a, b = _operands(a, b)
        _check_integer_divisor("floor_divide", a, b)
        return floor_divide(a, b, out=out)

    @writes_out
    def _remainder(a, b, out=OUT):
        a, b = _operands(a, b)
        _check_integer_divisor("remainder", a, b)
        return remainder(a, b, out=out)

    @writes_out
    def _pow(a, b, out=OUT):
        a, b = _operands(a, b)
        if _integral(b) and _integral(a) and _has_negative(b):
            raise ValueError("pow: integers to negative integer powers are not allowed")
        if getattr(a, "dtype", None) == np.complex64 or getattr(b, "dtype", None) == np.complex64:
            # NumPy's complex64 power overflows on the way (NaN for (1e30 + 1e30j) ** 0.5j): complex128, rounded once
            return _into(power(xp.asarray(a, np.complex128), xp.asarray(b, np.complex128)).astype(np.complex64), out)
        return power(a, b, out=out)

    def _where(condition, a, b):
        return xp.asarray(xp.where(condition, a, b))

    return {
        "neg": _unary(xp.negative), "abs": _unary(xp.abs), "sign": _unary(xp.sign),
        "exp": _unary(xp.exp), "expm1": _unary(xp.expm1), "log": _unary(xp.log), "log1p": _log1p,
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
        "reciprocal": _reciprocal, "sigmoid": _sigmoid,
        "isinf": _unary(xp.isinf), "isfinite": _unary(xp.isfinite), "log2": _unary(xp.log2),
        **_math_composites(xp, _in_kind, _binary, _operands, _integral, _same, _into, OUT),
        **_complex_kernels(xp, OUT),
    }


def writes_out(kernel):
    """Mark ``kernel`` as taking ``out=`` (``out_kernels`` collects the marked ones)."""
    kernel.writes_out = True
    return kernel


def out_kernels(kernels: dict) -> dict:
    """The entries of a backend's kernel table that take ``out=`` (``Backend.out_kernels``): the marked shared
    kernels, as they are. A wrapper (``functools.wraps`` copies the mark) may not pass ``out=`` on, so wrapped
    kernels and the backend's own replacements are left out."""
    return {name: k for name, k in kernels.items()
            if getattr(k, "writes_out", False) and not hasattr(k, "__wrapped__")}


def _math_composites(xp, in_kind, binary, operands, integral, same, into, OUT) -> dict:  # noqa: N803
    """Composites of core/dispatch/ops (trigonometric, rounding, bitwise) as the array library's own functions."""
    def binary_in_kind(ufunc):
        """A binary float function: half precision computes in float32 and answers in the input dtype."""
        def kernel(a, b, out=OUT):
            a, b = operands(a, b)
            dtype = getattr(a, "dtype", None) or b.dtype
            if dtype.itemsize == 2:
                return into(xp.asarray(ufunc(xp.asarray(a, np.float32), xp.asarray(b, np.float32))).astype(dtype),
                            out)
            return xp.asarray(ufunc(a, b)) if out is OUT else ufunc(a, b, out=out)
        return writes_out(kernel)

    @writes_out
    def trunc(a, out=OUT):
        return same(a, out) if integral(a) else (xp.trunc(a) if out is OUT else xp.trunc(a, out=out))

    @writes_out
    def bitwise_not(a, out=OUT):
        return xp.asarray(xp.invert(a)) if out is OUT else xp.invert(a, out=out)

    return {
        "asin": in_kind(xp.arcsin), "acos": in_kind(xp.arccos), "atan": in_kind(xp.arctan),
        "sinh": in_kind(xp.sinh), "cosh": in_kind(xp.cosh), "asinh": in_kind(xp.arcsinh),
        "acosh": in_kind(xp.arccosh), "atanh": in_kind(xp.arctanh), "log10": in_kind(xp.log10), "trunc": trunc,
        "atan2": binary_in_kind(xp.arctan2), "hypot": binary_in_kind(xp.hypot),
        "copysign": binary_in_kind(xp.copysign),
        "bitwise_and": binary(xp.bitwise_and), "bitwise_or": binary(xp.bitwise_or),
        "bitwise_xor": binary(xp.bitwise_xor), "bitwise_not": bitwise_not,
        "gcd": binary(xp.gcd), "lcm": binary(xp.lcm),
    }


def _complex_log1p(xp, z):
    """log(1 + z) without NumPy's cancellation near 0 (its relative error there reaches 1e-7 in complex128):
    where |z| < 1/2 the real part log|1 + z| is log1p(x (x + 2) + y^2) / 2, whose sum cannot overflow there."""
    x, y = z.real, z.imag
    shifted = z.copy()
    shifted.real += 1  # (z + 1 would turn a -0.0 imaginary part into +0.0, across log's branch cut)
    out = xp.log(shifted)  # the imaginary part, and the real part away from 0
    with np.errstate(all="ignore"):
        near = xp.log1p(x * (x + 2) + y * y) / 2
    out.real = xp.where(xp.abs(z) < 0.5, near, out.real)
    return out


def _complex_kernels(xp, OUT) -> dict:  # noqa: N803
    """The ops of complex numbers (core/dispatch/ops/elementwise/complex_numbers.py) as array functions."""
    def from_parts(real, imag):
        """real + i imag, exactly (an infinite part times 1j would make NaN of the other)."""
        real, imag = xp.broadcast_arrays(real, imag)
        out = xp.empty(real.shape, xp.result_type(real.dtype, np.complex64))
        out.real, out.imag = real, imag
        return out

    def angle(a):
        if a.dtype.kind == "c":
            return xp.asarray(xp.angle(a))
        return xp.where(xp.isnan(a), a, xp.where(a < 0, a.dtype.type(np.pi), a.dtype.type(0)))

    def sgn(a):
        """z / |z|, dividing each part by the real |z| (as PyTorch: sgn(inf) is NaN, not NumPy's 1); 0 at 0."""
        if a.dtype.kind != "c":
            return xp.asarray(xp.sign(a))
        magnitude = xp.abs(a)
        with np.errstate(invalid="ignore", divide="ignore"):
            direction = from_parts(a.real / magnitude, a.imag / magnitude)
        return xp.where(magnitude == 0, a.dtype.type(0), direction)

    def polar(abs, angle):
        if abs.dtype.itemsize == 2:  # half precision: computed in float32, its complex type's parts
            abs, angle = abs.astype(np.float32), angle.astype(np.float32)
        return from_parts(abs * xp.cos(angle), abs * xp.sin(angle))

    @writes_out
    def conj_physical(a, out=OUT):
        if a.dtype.kind == "c":
            return xp.conjugate(a, out=out)
        return a.copy() if out is OUT else _copy_into(a, out)  # (NumPy's conjugate of bools is int8)

    def _copy_into(a, out):
        xp.copyto(out, a)
        return out

    return {"angle": angle, "sgn": sgn, "polar": polar, "complex": from_parts, "conj_physical": conj_physical}
