"""The Python renderer: a program as plain Python on NumPy scalars, which numba compiles (the CPU's fusion).
"""
from __future__ import annotations

import math

from ember.dispatch import (ElementwiseProgram, Instr, UnsupportedProgram, bool_, dtype as DType, fast_erf, fast_exp,
                            float32, lower)

from .common import expressions, keeps_first, reduction_parts

#: Functions whose float32 calls (half types' too) the Python renderer writes as Ember's own branch-free
#: forms, which numba vectorizes (libm's scalar erff and expf stop that): name -> source of ``def f(x)``.
_FAST_FLOAT32 = {"erf": fast_erf.python_source, "exp": fast_exp.python_source}
_PY_FUNCTIONS = {"exp": "np.exp", "log": "np.log", "log1p": "np.log1p", "expm1": "np.expm1", "sqrt": "np.sqrt",
                 "tanh": "np.tanh", "erf": "math.erf", "abs": "np.abs", "sin": "np.sin", "cos": "np.cos",
                 "tan": "np.tan", "floor": "np.floor", "ceil": "np.ceil", "pow": "np.power"}  # max, min: keeps_first
#: How each instruction kind is written (consts and calls have functions of their own): format strings over
#: ``t`` (the instruction's type) and ``a0``, ``a1``, ... (its arguments).
_PY_FORMS = {
    "input": "x{a0}", "cast": "{t}({a0})", "arith": "{t}({a1} {a0} {a2})", "neg": "{t}(-{a0})",
    "compare": "{a1} {a0} {a2}", "and": "np.bool_({a0} and {a1})", "or": "np.bool_({a0} or {a1})",
    "not": "np.bool_(not {a0})", "where": "{a1} if {a0} else {a2}",
}


def _py_type(dt: DType) -> str:
    return "np.bool_" if dt is bool_ else f"np.{dt.name}"


def _py_const(value, dt: DType) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        text = "math.nan" if math.isnan(value) else ("math.inf" if value > 0 else "-math.inf")
    else:
        text = repr(value)
    return f"{_py_type(dt)}({text})"


def _fast_float32(ins: Instr) -> bool:
    return ins.kind == "call" and ins.args[0] in _FAST_FLOAT32 and ins.dtype is float32


def render_python(program: ElementwiseProgram, name: str = "element") -> str:
    """Python source of ``def name(x0, x1, ...)``: one element of each input (float32 values for half
    inputs) in, a tuple of the output values (float32 for half outputs) out. It uses ``np`` (NumPy) and
    ``math`` only, and keeps NumPy scalar types throughout, so it runs as plain Python on NumPy scalars and
    compiles with numba (use ``error_model="numpy"``: division by zero gives inf, as in NumPy).

    A float32 ``erf`` or ``exp`` (half types' too) calls ``name_erf`` or ``name_exp``, defined first:
    ``ember.dispatch.fast_erf``'s and ``fast_exp``'s branch-free forms, which numba vectorizes (libm's
    scalar erf and exp, kept for float64, stop that).

    With a reduction, also ``name_init()``, ``name_combine(acc, v)`` and ``name_finish(acc, count)`` (see
    the module docstring; ``v`` is the element function's output).

    Complex programs are declined (UnsupportedProgram): numba's complex functions are its own, not NumPy's
    (special values, branch cuts), and the CPU's complex kernels are NumPy's."""
    if any(dt.is_complex for dt in program.dtypes()):
        raise UnsupportedProgram("render_python: complex programs run op by op on NumPy's complex loops")
    instrs, outputs = lower(program)
    fast = sorted({ins.args[0] for ins in instrs if _fast_float32(ins)})
    lines = [line for function in fast for line in (_FAST_FLOAT32[function](f"{name}_{function}"), "")]
    lines.append(f"def {name}({', '.join(f'x{k}' for k in range(len(program.inputs)))}):")

    def call(ins: Instr) -> str:
        a = ins.args
        if _fast_float32(ins):
            return f"{name}_{a[0]}({a[1]})"
        if a[0] in ("max", "min"):
            return f"{a[1]} if {keeps_first(a[0], a[1], a[2], ins.dtype, 'or')} else {a[2]}"
        return f"{_py_type(ins.dtype)}({_PY_FUNCTIONS[a[0]]}({', '.join(a[1:])}))"
    for ins, text in expressions(instrs, _PY_FORMS, _py_type, _py_const, call):
        lines.append(f"    {ins.var} = {text}")
    lines.append(f"    return ({', '.join(outputs)},)")
    if program.reduction is not None:
        lines += _py_reduction(program, name)
    return "\n".join(lines) + "\n"


def _py_reduction(program: ElementwiseProgram, name: str) -> list[str]:
    op, acc, identity, _, result = reduction_parts(program, None)
    t = _py_type(acc)
    if op in ("sum", "mean"):
        combine = f"{t}(acc + {t}(v))"
    else:
        keep = ("acc >= v" if op == "amax" else "acc <= v") + (" or acc != acc" if acc.is_floating_point else "")
        combine = f"acc if ({keep}) else v"
    finish = f"acc / {t}(count)" if op == "mean" else "acc"
    return ["", "", f"def {name}_init():", f"    return {_py_const(identity, acc)}", "", "",
            f"def {name}_combine(acc, v):", f"    return {combine}", "", "",
            f"def {name}_finish(acc, count):", f"    return {_py_type(result)}({finish})"]


__all__ = ["render_python"]
