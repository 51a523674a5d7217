"""Elementwise kernels, run by the strided kernel generator (``strided.run``) as C expressions over x0, x1, ...
(each operand in its compute type).

An op with a ``scalar=`` formula gets its kernel from the formula (``formula_kernel``: rendered in the OpenCL
dialect by ``ember.backends.codegen``, as the fused kernels are), so eager, fused and composite results agree.
What stays hand-written is listed in ``ember.backends.codegen.handwritten`` with its reason: calls the formula
does not cover (division's rounding modes and integer powers, whose errors need a read back; add/sub with an
alpha, which the formula would compile into the kernel) and ops the formula language cannot state (round,
the inverse trigonometric and hyperbolic functions, bitwise ops). Semantics follow NumPy's, which PyTorch's
CPU results match. Complex operands (float2/double2 pairs) compute through the codegen's complex helpers
(``ember.backends.codegen.complex_c``), in formula kernels and hand-written ones alike.

Every kernel here takes ``out=``, an array of the result's shape and dtype to write into through its own
strides (``strided.run``): the backend's ``out_kernels`` (``OUT_KERNELS``), which run an in-place call
(``x.add_(y)``) as one launch. Each work-item reads its elements before it writes its own, so ``out`` may be
an operand itself; the dispatcher keeps other overlaps off this road (``Backend.writes_into``). ``OUT_KERNELS``
also renders the formula of in-place composites the backend has no kernel for (``relu_``, ``clamp_min_``,
``lerp_``: one launch instead of the composite's ops and a copy), declining calls the formula does not cover.
"""
from __future__ import annotations

import ast

import numpy as np

from ember.backends.codegen import OPENCL, c_value_function, one_step_program
from ember.backends.float_divmod import OPENCL_QUALIFIER, float_divmod_source, floor_divide_name, remainder_name
from ember.dispatch import OPS, BackendError, UnsupportedProgram, formula, parse_formula

from .. import strided
from ..array import CLArray
from ..cltypes import EMBER_DTYPE, NUMPY_DTYPE, compute_ctype, is_float
from ._source import complex_call, complex_helpers
from .reductions import any_true

BOOL = np.dtype(np.bool_)


def _operands(*values):
    """Native arrays stay; a Python number (the fast path passes them) takes the arrays' dtype."""
    array = next(v for v in values if isinstance(v, CLArray))
    return array.runtime, [v if isinstance(v, CLArray) else strided.Scalar(v, array.dtype) for v in values], array


def _dtype_kind(dtype: np.dtype) -> str:
    if dtype.kind == "c":
        return "complex"
    return "float" if is_float(dtype) else ("bool" if dtype == BOOL else "int")


def unary(expressions: dict, complex_function: str | None = None):
    """A kernel from {"float"|"int"|"bool": expression of x0}; "int" also serves bool unless given. Complex
    inputs call the codegen's ``complex_function`` where given."""
    def kernel(a, out=None):
        kind = _dtype_kind(a.dtype)
        if kind == "complex" and complex_function is not None:
            return strided.run(a.runtime, complex_call(complex_function, a.dtype, "x0"), [a], a.dtype, out,
                               helpers=complex_helpers(a.dtype))
        expr = expressions.get(kind) or expressions.get("int" if kind == "bool" else kind)
        return strided.run(a.runtime, expr, [a], a.dtype, out)
    return kernel


def binary(expressions: dict):
    def kernel(a, b, out=None):
        runtime, operands, array = _operands(a, b)
        kind = _dtype_kind(array.dtype)
        expr = expressions.get(kind) or expressions.get("int" if kind == "bool" else kind)
        return strided.run(runtime, expr, operands, array.dtype, out)
    return kernel


def _same(expr: str) -> dict:
    return {"float": expr, "int": expr}


def formula_kernel(op_name: str, by_hand=None):
    """``op_name``'s kernel rendered from its formula; calls it has no rendering for go to ``by_hand``: an
    attribute combination without a formula, one whose formula names an attribute (its value would be compiled
    into the kernel: a new alpha, a new kernel), or a program the renderer declines (integer powers)."""
    op = OPS[op_name]
    tensors, attributes = op.tensor_positions, op.attr_positions
    rendered: dict[tuple, tuple | None] = {}  # (attrs, operand dtypes) -> (expression, C source, out dtype) or None

    def kernel(*args, out=None):
        values = [args[i] for i in tensors]
        attrs = tuple(args[i] for i in attributes)
        array = next(v for v in values if isinstance(v, CLArray))
        key = (attrs, tuple(v.dtype if isinstance(v, CLArray) else None for v in values))
        entry = rendered.get(key, False)
        if entry is False:
            entry = rendered[key] = _render(op_name, values, attrs, array.dtype)
        if entry is None:
            if by_hand is None:
                raise BackendError(f"opencl: {op_name} has no kernel for attributes {attrs!r}: its formula does not "
                                   "cover them and no hand-written kernel is given")
            return by_hand(*args, out=out)
        expression, source, out_dtype = entry
        operands = [v if isinstance(v, CLArray) else strided.Scalar(v, array.dtype) for v in values]
        return strided.run(array.runtime, expression, operands, out_dtype, out, helpers=source)
    kernel.formula, kernel.by_hand = op_name, by_hand
    return kernel


def _render(op_name: str, values: list, attrs: tuple, number_dtype: np.dtype) -> tuple | None:
    """(expression over x0, x1, ..., the C it calls, the result's dtype), or None: no rendering (see above)."""
    op = OPS[op_name]
    text = formula(op, attrs)
    if text is None or _names_attribute(op, text):
        return None
    dtypes = [EMBER_DTYPE[v.dtype if isinstance(v, CLArray) else number_dtype] for v in values]
    program = one_step_program(op_name, dtypes, attrs)
    name = f"ember_op_{op_name}"  # (ember_tanh is the dialect's macro)
    try:
        source = c_value_function(program, OPENCL, name)
    except UnsupportedProgram:
        return None
    return f"{name}({', '.join(f'x{k}' for k in range(len(values)))})", source, \
        NUMPY_DTYPE[program.steps[0].out]


def _names_attribute(op, text: str) -> bool:
    """Whether formula ``text`` of ``op`` reads an attribute's value (which rendering would compile in)."""
    names = {op.params[i].name for i in op.attr_positions}
    return any(isinstance(node, ast.Name) and node.id in names for node in ast.walk(parse_formula(op, text)))


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


def _div(a, b, rounding_mode, op: str = "div", out=None):
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
    return strided.run(runtime, expr, operands, array.dtype, out, helpers=_helpers(t))


def _floor_divide(a, b, out=None):
    return _div(a, b, "floor", "floor_divide", out)


def _remainder(a, b, out=None):
    runtime, operands, array = _operands(a, b)
    t = compute_ctype(array.dtype)
    if is_float(array.dtype):
        expr = f"{remainder_name(t)}(x0, x1)"
    else:
        _check_divisor("remainder", b, runtime)
        expr = f"imod_{t}(x0, x1)"
    return strided.run(runtime, expr, operands, array.dtype, out, helpers=_helpers(t))


def _pow(a, b, out=None):
    runtime, operands, array = _operands(a, b)
    t = compute_ctype(array.dtype)
    if is_float(array.dtype):
        return strided.run(runtime, "pow(x0, x1)", operands, array.dtype, out)
    if array.dtype != BOOL:
        negative = (any_true(strided.run(runtime, "x0 < 0", [b], BOOL)) if isinstance(b, CLArray) else b < 0)
        if negative:
            raise ValueError("pow: integers to negative integer powers are not allowed")
    return strided.run(runtime, f"ipow_{t}(x0, x1)", operands, array.dtype, out, helpers=_int_helpers(t))


def _scaled(op: str):
    """add/sub with alpha: alpha is a kernel argument in the computation dtype (integers wrap)."""
    def kernel(a, b, alpha, out=None):
        runtime, operands, array = _operands(a, b)
        if alpha == 1:
            return strided.run(runtime, f"x0 {op} x1", operands, array.dtype, out)
        operands.append(strided.Scalar(alpha, array.dtype))
        if array.dtype.kind == "c":  # (a vector product would multiply part by part)
            scaled = complex_call("mul", array.dtype, "x2", "x1")
            expr = complex_call("add" if op == "+" else "sub", array.dtype, "x0", scaled)
            return strided.run(runtime, expr, operands, array.dtype, out, helpers=complex_helpers(array.dtype))
        return strided.run(runtime, f"x0 {op} x2 * x1", operands, array.dtype, out)
    return kernel


def _round(a, decimals, out=None):
    if not is_float(a.dtype):
        if decimals >= 0:
            return strided.run(a.runtime, "x0", [a], a.dtype, out)
        wide = "double" if a.runtime.fp64 else "float"
        scale = f"(({wide})1e{-decimals})"
        return strided.run(a.runtime, f"rint(({wide})x0 / {scale}) * {scale}", [a], a.dtype, out)
    t = compute_ctype(a.dtype)
    if decimals == 0:
        return strided.run(a.runtime, "rint(x0)", [a], a.dtype, out)
    scale = f"(({t})1e{abs(decimals)})"
    expr = f"rint(x0 * {scale}) / {scale}" if decimals > 0 else f"rint(x0 / {scale}) * {scale}"
    return strided.run(a.runtime, expr, [a], a.dtype, out)


#: ops whose kernel is their formula, rendered (with the hand-written kernel for calls it does not cover)
def _complex_isinf(a, out=None):
    """Either part infinite (NaN in the other included), as the op's composite |z| == inf."""
    return strided.run(a.runtime, "(isinf(x0.x) || isinf(x0.y))", [a], BOOL, out)


#: (complex atanh and isinf: the lowering declines their formulas, ``REAL_ONLY_FORMULAS``)
_BY_HAND_FOR_SOME_CALLS = {"add": _scaled("+"), "sub": _scaled("-"), "div": _div, "pow": _pow,
                           "atanh": unary({}, complex_function="atanh"), "isinf": _complex_isinf}
FORMULA_OPS = ("neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "erf",
               "floor", "ceil", "logical_not", "isnan", "add", "sub", "mul", "div", "pow", "maximum", "minimum",
               "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "where",
               # composites worth one kernel instead of several
               "reciprocal", "sigmoid", "isinf", "isfinite", "atanh", "log10", "trunc", "copysign")

KERNELS = {
    **{name: formula_kernel(name, _BY_HAND_FOR_SOME_CALLS.get(name)) for name in FORMULA_OPS},
    "round": _round, "floor_divide": _floor_divide, "remainder": _remainder,
    # composites of core/dispatch/ops/elementwise/trigonometric.py and bitwise.py as OpenCL C's own functions
    # (the formula language has no such functions)
    **{name: unary({"float": f"{name}(x0)"}, complex_function=name)
       for name in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh")},
    "atan2": binary({"float": "atan2(x0, x1)"}), "hypot": binary({"float": "hypot(x0, x1)"}),
    "bitwise_and": binary(_same("x0 & x1")), "bitwise_or": binary(_same("x0 | x1")),
    "bitwise_xor": binary(_same("x0 ^ x1")), "bitwise_not": unary({"int": "~x0", "bool": "!x0"}),
}


def _declined(*args, out=None):
    """No rendering for this call (an attribute the formula would compile in, an integer power): the
    dispatcher then runs the op's composite and copies (an out-kernel's None)."""
    return None


def out_kernels(every: dict) -> dict:
    """The backend's ``out_kernels``: every kernel above, and a formula kernel for each in-place composite with a
    formula for which ``every`` (the backend's whole kernel table) has no kernel."""
    table = dict(KERNELS)
    for name, op in OPS.items():
        if op.inplace and op.scalar is not None and name not in every:
            table[name] = formula_kernel(name, _declined)
    return table
