"""Elementwise ops as C expressions over x0, x1, ... (each operand in its compute type), run by
the strided kernel generator. Semantics follow NumPy's, which PyTorch's CPU results match.
"""
from __future__ import annotations

import numpy as np

from ember.backends.float_divmod import OPENCL_QUALIFIER, float_divmod_source, floor_divide_name, remainder_name
from ember.dispatch import OPENCL

from .. import strided
from ..array import CLArray
from ..cltypes import compute_ctype, is_float
from .reduction import any_true

BOOL = np.dtype(np.bool_)


def _operands(*values):
    """Native arrays stay; a Python number (the fast path passes them) takes the arrays' dtype."""
    array = next(v for v in values if isinstance(v, CLArray))
    return array.runtime, [v if isinstance(v, CLArray) else strided.Scalar(v, array.dtype) for v in values], array


def _dtype_kind(dtype: np.dtype) -> str:
    return "float" if is_float(dtype) else ("bool" if dtype == BOOL else "int")


def unary(expressions: dict, out_bool: bool = False, helpers: str = ""):
    """A kernel from {"float"|"int"|"bool": expression of x0}; "int" also serves bool unless given. ``helpers``:
    C the expressions use (the OpenCL dialect's macros)."""
    def kernel(a):
        kind = _dtype_kind(a.dtype)
        expr = expressions.get(kind) or expressions.get("int" if kind == "bool" else kind)
        return strided.run(a.runtime, expr, [a], BOOL if out_bool else a.dtype, helpers=helpers)
    return kernel


def binary(expressions: dict, out_bool: bool = False, helpers=None):
    def kernel(a, b):
        runtime, operands, array = _operands(a, b)
        kind = _dtype_kind(array.dtype)
        expr = expressions.get(kind) or expressions.get("int" if kind == "bool" else kind)
        code = helpers(compute_ctype(array.dtype)) if helpers else ""
        return strided.run(runtime, expr, operands, BOOL if out_bool else array.dtype, helpers=code)
    return kernel


def _same(expr: str) -> dict:
    return {"float": expr, "int": expr}


# -- integer division, remainder and powers --------------------------------------------------

def _check_divisor(op: str, b, runtime) -> None:
    """Integer division by zero raises, as on the CPU (this reads one byte back from the device)."""
    if isinstance(b, CLArray):
        zero = any_true(strided.run(runtime, "x0 == 0", [b], BOOL))
    else:
        zero = b == 0
    if zero:
        raise ZeroDivisionError(f"{op}: integer division by zero")


def _int_helpers(t: str) -> str:
    """Python-style floor division and remainder on integers (b == 0 and b == -1 never trap)."""
    return f"""
inline {t} idiv_{t}({t} a, {t} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({t})(-a);
    {t} q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}}
inline {t} imod_{t}({t} a, {t} b) {{
    if (b == 0 || b == -1) return 0;
    {t} r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}}
inline {t} itrunc_{t}({t} a, {t} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({t})(-a);
    return a / b;
}}
inline {t} ipow_{t}({t} base, {t} e) {{
    {t} result = 1;
    while (e > 0) {{ if (e & 1) result *= base; base *= base; e >>= 1; }}
    return result;
}}
"""


def _helpers(t: str) -> str:
    return float_divmod_source(t, OPENCL_QUALIFIER) if t in ("float", "double") else _int_helpers(t)


def _div(a, b, rounding_mode, op: str = "div"):
    runtime, operands, array = _operands(a, b)
    t = compute_ctype(array.dtype)
    floating = is_float(array.dtype)
    if rounding_mode is None:
        expr = "x0 / x1"
    elif rounding_mode == "floor":
        if not floating:
            _check_divisor(op, b, runtime)
        expr = f"{floor_divide_name(t)}(x0, x1)" if floating else f"idiv_{t}(x0, x1)"
    else:
        if not floating:
            _check_divisor(op, b, runtime)
        expr = "trunc(x0 / x1)" if floating else f"itrunc_{t}(x0, x1)"
    return strided.run(runtime, expr, operands, array.dtype, helpers=_helpers(t))


def _floor_divide(a, b):
    return _div(a, b, "floor", "floor_divide")


def _remainder(a, b):
    runtime, operands, array = _operands(a, b)
    t = compute_ctype(array.dtype)
    if is_float(array.dtype):
        expr = f"{remainder_name(t)}(x0, x1)"
    else:
        _check_divisor("remainder", b, runtime)
        expr = f"imod_{t}(x0, x1)"
    return strided.run(runtime, expr, operands, array.dtype, helpers=_helpers(t))


def _pow(a, b):
    runtime, operands, array = _operands(a, b)
    t = compute_ctype(array.dtype)
    if is_float(array.dtype):
        return strided.run(runtime, "pow(x0, x1)", operands, array.dtype)
    if array.dtype != BOOL:
        negative = (any_true(strided.run(runtime, "x0 < 0", [b], BOOL)) if isinstance(b, CLArray) else b < 0)
        if negative:
            raise ValueError("pow: integers to negative integer powers are not allowed")
    return strided.run(runtime, f"ipow_{t}(x0, x1)", operands, array.dtype, helpers=_int_helpers(t))


def _scaled(op: str):
    """add/sub with alpha: alpha is a kernel argument in the computation dtype (integers wrap)."""
    def kernel(a, b, alpha):
        runtime, operands, array = _operands(a, b)
        if alpha == 1:
            return strided.run(runtime, f"x0 {op} x1", operands, array.dtype)
        operands.append(strided.Scalar(alpha, array.dtype))
        return strided.run(runtime, f"x0 {op} x2 * x1", operands, array.dtype)
    return kernel


def _round(a, decimals):
    if not is_float(a.dtype):
        if decimals >= 0:
            return strided.run(a.runtime, "x0", [a], a.dtype)
        wide = "double" if a.runtime.fp64 else "float"
        scale = f"(({wide})1e{-decimals})"
        return strided.run(a.runtime, f"rint(({wide})x0 / {scale}) * {scale}", [a], a.dtype)
    t = compute_ctype(a.dtype)
    if decimals == 0:
        return strided.run(a.runtime, "rint(x0)", [a], a.dtype)
    scale = f"(({t})1e{abs(decimals)})"
    expr = f"rint(x0 * {scale}) / {scale}" if decimals > 0 else f"rint(x0 / {scale}) * {scale}"
    return strided.run(a.runtime, expr, [a], a.dtype)


def _where(condition, a, b):
    runtime, operands, array = _operands(condition, a, b)
    return strided.run(runtime, "x0 ? x1 : x2", operands, array.dtype if array is not condition else
                       next(v.dtype for v in (a, b) if isinstance(v, CLArray)))


# Some OpenCL libraries (PoCL's float tanh) stop just short of ±1: the OpenCL dialect's tanh, which fused kernels
# call too, rounds to ±1 past the points where tanh does.
_TANH = unary({"float": f"{OPENCL.functions['tanh']}(x0)"}, helpers=OPENCL.helpers)
_MAX = {"float": "(isnan(x0) || x0 > x1) ? x0 : x1", "int": "x0 > x1 ? x0 : x1"}
_MIN = {"float": "(isnan(x0) || x0 < x1) ? x0 : x1", "int": "x0 < x1 ? x0 : x1"}

KERNELS = {
    "neg": unary(_same("-x0")),
    "abs": unary({"float": "fabs(x0)", "int": "x0 < 0 ? -x0 : x0", "bool": "x0"}),
    "sign": unary({"float": "x0 > 0 ? 1 : (x0 < 0 ? -1 : x0)", "int": "(x0 > 0) - (x0 < 0)", "bool": "x0"}),
    "exp": unary({"float": "exp(x0)"}), "expm1": unary({"float": "expm1(x0)"}),
    "log": unary({"float": "log(x0)"}), "log1p": unary({"float": "log1p(x0)"}),
    "sqrt": unary({"float": "sqrt(x0)"}), "sin": unary({"float": "sin(x0)"}), "cos": unary({"float": "cos(x0)"}),
    "tan": unary({"float": "tan(x0)"}), "tanh": _TANH, "erf": unary({"float": "erf(x0)"}),
    "floor": unary({"float": "floor(x0)", "int": "x0"}), "ceil": unary({"float": "ceil(x0)", "int": "x0"}),
    "round": _round,
    "logical_not": unary(_same("!x0"), out_bool=True),
    "isnan": unary({"float": "isnan(x0)", "int": "0"}, out_bool=True),
    "add": _scaled("+"), "sub": _scaled("-"), "mul": binary(_same("x0 * x1")),
    "div": _div, "floor_divide": _floor_divide, "remainder": _remainder, "pow": _pow,
    "maximum": binary(_MAX), "minimum": binary(_MIN),
    "eq": binary(_same("x0 == x1"), True), "ne": binary(_same("x0 != x1"), True),
    "lt": binary(_same("x0 < x1"), True), "le": binary(_same("x0 <= x1"), True),
    "gt": binary(_same("x0 > x1"), True), "ge": binary(_same("x0 >= x1"), True),
    "logical_and": binary(_same("(x0 != 0) && (x1 != 0)"), True),
    "logical_or": binary(_same("(x0 != 0) || (x1 != 0)"), True),
    "logical_xor": binary(_same("(x0 != 0) != (x1 != 0)"), True),
    "where": _where,
    # composites worth one kernel instead of several
    "reciprocal": unary({"float": "1 / x0"}),
    "sigmoid": unary({"float": "1 / (1 + exp(-x0))"}),
    "isinf": unary({"float": "isinf(x0)", "int": "0"}, out_bool=True),
    "isfinite": unary({"float": "isfinite(x0)", "int": "1"}, out_bool=True),
    # composites of core/dispatch/ops/trigonometric.py, rounding.py and bitwise.py as OpenCL C's own functions
    "asin": unary({"float": "asin(x0)"}), "acos": unary({"float": "acos(x0)"}), "atan": unary({"float": "atan(x0)"}),
    "sinh": unary({"float": "sinh(x0)"}), "cosh": unary({"float": "cosh(x0)"}),
    "asinh": unary({"float": "asinh(x0)"}), "acosh": unary({"float": "acosh(x0)"}),
    "atanh": unary({"float": "atanh(x0)"}), "log10": unary({"float": "log10(x0)"}),
    "trunc": unary({"float": "trunc(x0)", "int": "x0"}),
    "atan2": binary({"float": "atan2(x0, x1)"}), "hypot": binary({"float": "hypot(x0, x1)"}),
    "copysign": binary({"float": "copysign(x0, x1)"}),
    "bitwise_and": binary(_same("x0 & x1")), "bitwise_or": binary(_same("x0 | x1")),
    "bitwise_xor": binary(_same("x0 ^ x1")), "bitwise_not": unary({"int": "~x0", "bool": "!x0"}),
}
