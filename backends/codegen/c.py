"""The C renderer, with one dialect per C-like kernel language: OpenCL C (PoCL runs it in CI) and CUDA C++.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ember.dispatch import ElementwiseProgram, bool_, dtype as DType, lower, value_dtype

from . import complex_c
from .common import expressions, keeps_first, reduction_parts


@dataclass(frozen=True)
class CDialect:
    """What differs between the C dialects: type names (of value dtypes; half types are float values),
    the function qualifier, the spelling of infinity and NaN, the suffix of 64-bit integer literals, how a
    complex pair is built from its parts (``complex_literal``: a format of ``t``, ``re``, ``im``; the complex
    types are the vector types ``float2``/``double2`` in both dialects: see ``complex_c``; ``complex_preamble``
    comes before the complex helpers), function names
    where they differ from C's, and ``helpers``: the C those functions need (macros), which a kernel's source
    places once before the rendered code, as every kernel of the dialect's backend does."""

    types: Mapping[str, str]
    qualifier: str
    infinity: str
    nan: str
    long_suffix: str
    complex_literal: str
    complex_preamble: str = ""
    functions: Mapping[str, str] = field(default_factory=dict)
    helpers: str = ""


# PoCL's float tanh stops just short of ±1; past these points tanh rounds to ±1, so the OpenCL dialect's tanh
# does (a macro: OpenCL C has no overloading of user functions). Eager and fused kernels both take it from here.
_OPENCL_TANH = "#define ember_tanh(v) (fabs(v) > (sizeof(v) == 4 ? 9.02f : 19.07) ? ((v) > 0 ? 1 : -1) : tanh(v))\n"
OPENCL = CDialect(types={"bool": "bool", "uint8": "uchar", "int8": "char", "int16": "short", "int32": "int",
                         "int64": "long", "float32": "float", "float64": "double", "complex64": "float2",
                         "complex128": "double2"},
                  qualifier="inline", infinity="INFINITY", nan="NAN", long_suffix="L",
                  complex_literal="(({t})({re}, {im}))",
                  # no a * b + c contracted to one fma in complex kernels: NumPy's loops round each step, and a
                  # last-bit difference beside an infinite part compares unequal
                  complex_preamble="#pragma OPENCL FP_CONTRACT OFF\n",
                  functions={"tanh": "ember_tanh"}, helpers=_OPENCL_TANH)
CUDA = CDialect(types={"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short",
                       "int32": "int", "int64": "long long", "float32": "float", "float64": "double",
                       "complex64": "float2", "complex128": "double2"},
                qualifier="__device__ __forceinline__", infinity="CUDART_INF", nan="CUDART_NAN", long_suffix="LL",
                complex_literal="make_{t}({re}, {im})")

#: How each instruction kind is written (consts and calls have functions of their own).
_C_FORMS = {
    "input": "x{a0}", "cast": "({t})({a0})", "cast_bool": "({a0} != 0)", "arith": "({t})({a1} {a0} {a2})",
    "neg": "({t})(-{a0})", "compare": "({a1} {a0} {a2})", "and": "({a0} && {a1})", "or": "({a0} || {a1})",
    "not": "(!{a0})", "where": "({a0} ? {a1} : {a2})",
}


def _c_const(value, dt: DType, dialect: CDialect) -> str:
    t = dialect.types[dt.name]
    if dt is bool_:
        return "true" if value else "false"
    if dt.is_floating_point:
        if math.isnan(value):
            return f"(({t}){dialect.nan})"
        if math.isinf(value):
            return f"(({t}){dialect.infinity})" if value > 0 else f"(-({t}){dialect.infinity})"
        return f"(({t}){float(value).hex()})"
    suffix = dialect.long_suffix if not -2 ** 31 < value < 2 ** 31 else ""
    return f"(({t})({value}{suffix}))" if value != -2 ** 63 else f"(({t})(-9223372036854775807{suffix} - 1))"


def render_c(program: ElementwiseProgram, dialect: CDialect = OPENCL, name: str = "ember_element",
             accumulator: DType | None = None) -> str:
    """C source of ``qualifier void name(T0 x0, ..., U0 *y0, ...)``: one element of each input in (a float
    for half inputs: convert on load), the outputs written through the pointers (a float for half outputs:
    convert on store). Integer arithmetic is done in the compute type and cast back, so it wraps. The code
    uses ``dialect.helpers``, which the kernel's source defines before it; a program with complex values
    begins with the complex helpers it calls (``complex_c``).

    With a reduction, also ``A name_init(void)``, ``A name_combine(A acc, V v)`` (``v``: the value ``name``
    wrote to ``*y0``) and ``R name_finish(A acc, long count)`` (the result value, a float for half results),
    e.g. one work-item per result element looping over the reduced positions. ``accumulator`` replaces the
    accumulator dtype (``accumulator_dtype``): float32 on devices without doubles."""
    instrs, outputs = lower(program)
    types = dialect.types
    params = [f"{types[value_dtype(dt).name]} x{k}" for k, (_, dt) in enumerate(program.inputs)]
    params += [f"{types[value_dtype(program.steps[j].out).name]} *y{i}" for i, j in enumerate(program.outputs)]
    lines = [f"{dialect.qualifier} void {name}({', '.join(params)}) {{"]
    typed: dict = {}
    reals = complex_c.real_constants(instrs)
    for ins, text in expressions(instrs, _C_FORMS, lambda dt: types[dt.name],
                                 lambda value, dt: "" if dt.is_complex else _c_const(value, dt, dialect),
                                 lambda ins: _c_call(ins.args[0], ins.args[1:], ins.dtype, dialect)):
        if complex_c.touches_complex(ins, typed):
            text = complex_c.expression(ins, typed, reals, dialect, lambda v, dt: _c_const(v, dt, dialect)) or text
        typed[ins.var] = ins.dtype
        lines.append(f"    {types[ins.dtype.name]} {ins.var} = {text};")
    lines += [f"    *y{i} = {var};" for i, var in enumerate(outputs)]
    lines.append("}")
    if program.reduction is not None:
        reduction, typed["accumulator"] = _c_reduction(program, dialect, name, accumulator)
        lines += reduction
        typed["result"] = program.result_dtype()
    return complex_c.helpers_for(set(typed.values()), dialect) + "\n".join(lines) + "\n"


def _c_reduction(program: ElementwiseProgram, dialect: CDialect, name: str,
                 accumulator: DType | None) -> tuple[list[str], DType]:
    """The reduction's functions, and the accumulator's dtype."""
    if program.steps[program.outputs[0]].out.is_complex:
        return _c_complex_reduction(program, dialect, name, accumulator)
    op, acc, identity, value, result = reduction_parts(program, accumulator)
    types, q = dialect.types, dialect.qualifier
    a, v, r = types[acc.name], types[value.name], types[result.name]
    if op in ("sum", "mean"):
        combine = f"({a})(acc + ({a})v)"
    else:
        keep = f"(acc {'>=' if op == 'amax' else '<='} v)" + (" || acc != acc" if acc.is_floating_point else "")
        combine = f"({keep}) ? acc : v"
    finish = f"({r})(acc / ({a})count)" if op == "mean" else f"({r})acc"
    return [f"{q} {a} {name}_init(void) {{ return {_c_const(identity, acc, dialect)}; }}",
            f"{q} {a} {name}_combine({a} acc, {v} v) {{ return {combine}; }}",
            f"{q} {r} {name}_finish({a} acc, {types['int64']} count) {{ return {finish}; }}"], acc


def _c_complex_reduction(program: ElementwiseProgram, dialect: CDialect, name: str,
                         accumulator: DType | None) -> tuple[list[str], DType]:
    """The reduction functions of a complex sum or mean (the lowering refuses complex amax/amin)."""
    op, acc, _, value, result = reduction_parts(program, accumulator and accumulator.to_complex())
    types, q = dialect.types, dialect.qualifier
    a, v, r = types[acc.name], types[value.name], types[result.name]
    combine = f"{complex_c.function('add', acc)}(acc, {complex_c.cast('v', value, acc, None)})"
    total = complex_c.make(acc, "acc.x / count", "acc.y / count") if op == "mean" else "acc"
    return [f"{q} {a} {name}_init(void) {{ return {complex_c.make(acc, '0', '0')}; }}",
            f"{q} {a} {name}_combine({a} acc, {v} v) {{ return {combine}; }}",
            f"{q} {r} {name}_finish({a} acc, {types['int64']} count) {{ "
            f"return {complex_c.cast(total, acc, result, None)}; }}"], acc


def _c_call(name: str, args: tuple, dt: DType, dialect: CDialect) -> str:
    t = dialect.types[dt.name]
    if name in ("max", "min"):
        return f"({keeps_first(name, *args, dt, '||')} ? {args[0]} : {args[1]})"
    if name == "abs":
        return f"({t})({'fabs' if dt.is_floating_point else 'abs'}({args[0]}))"
    return f"({t})({dialect.functions.get(name, name)}({', '.join(args)}))"


__all__ = ["CDialect", "CUDA", "OPENCL", "render_c"]
