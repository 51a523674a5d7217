"""What the Python and C renderers share: walking a lowered program, max/min's NaN and tie rule, the parts of
a final reduction. The semantics (casts, wrapping, half types) are decided once, by ``ember.dispatch``'s
lowering; a renderer only spells each instruction."""
from __future__ import annotations

from typing import Callable

from ember.dispatch import (ElementwiseProgram, Instr, accumulator_dtype, bool_, convert_constant, dtype as DType,
                            reduction_identity, value_dtype)


def expressions(instrs: list[Instr], forms: dict, type_name: Callable, const: Callable, call: Callable):
    """``(instruction, right-hand side)`` for each instruction, in one renderer's syntax."""
    for ins in instrs:
        if ins.kind == "const":
            yield ins, const(ins.args[0], ins.dtype)
        elif ins.kind == "call":
            yield ins, call(ins)
        else:
            kind = "cast_bool" if ins.kind == "cast" and ins.dtype is bool_ and "cast_bool" in forms else ins.kind
            yield ins, forms[kind].format(t=type_name(ins.dtype), **{f"a{i}": x for i, x in enumerate(ins.args)})


def keeps_first(name: str, a: str, b: str, dt: DType, or_: str) -> str:
    """When max/min of ``a`` and ``b`` is ``a``: it is larger (smaller), or NaN. NaN propagates, as in NumPy's
    maximum/minimum (C's fmax/fmin drop it), and ties give ``b``, as NumPy's vector loops and the OpenCL
    op-by-op kernels do (which matters only for the sign of a zero)."""
    keep = f"({a} > {b})" if name == "max" else f"({a} < {b})"
    if dt.is_floating_point:  # (integers have no NaN, and compilers warn about ``a != a`` on them)
        keep = f"({keep} {or_} {a} != {a})"
    return keep


def reduction_parts(program: ElementwiseProgram, accumulator: DType | None):
    """(op, accumulator dtype, identity, value dtype, result value dtype) of the program's reduction."""
    op = program.reduction[0]
    acc = accumulator or accumulator_dtype(program)
    return op, acc, convert_constant(reduction_identity(op, acc), acc), value_dtype(program.steps[program.outputs[0]].out), \
        value_dtype(program.result_dtype())


__all__ = ["expressions", "keeps_first", "reduction_parts"]
