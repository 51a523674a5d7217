"""Eager kernels from formulas: one op call as a one-step elementwise program, rendered like a fused one.

A backend's kernel for an op with a ``scalar=`` formula is that formula rendered, so the eager kernel, the
fused kernel and the composite agree (``tests/test_formula_kernels.py``). The kernel receives its tensors in
the computation dtype (the dispatcher promotes them; an ``Index``-typed operand such as ``where``'s
condition keeps its own), so the program's step computes in the first promoted operand's dtype and answers
in bool where the formula's value is a truth value (comparisons, ``isnan``), in the component dtype where it is
the magnitude of a complex value (``abs``), else in that dtype.
"""
from __future__ import annotations

import ast
from typing import Sequence

from ember.dispatch import (OPS, ElementwiseProgram, Step, bool_, dtype as DType, formula, parse_formula,
                            value_dtype)

from .c import CDialect, render_c


def answers_truth(op_name: str, attrs: tuple) -> bool:
    """Whether ``op_name``'s formula (for these attribute values) is a truth value: a comparison, and/or/not."""
    op = OPS[op_name]
    node = parse_formula(op, formula(op, attrs))
    negation = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    return negation or isinstance(node, (ast.Compare, ast.BoolOp))


def answers_magnitude(op_name: str, attrs: tuple, compute: DType) -> bool:
    """Whether ``op_name``'s formula computing in ``compute`` is a complex value's (real) magnitude: ``abs(z)``."""
    node = parse_formula(OPS[op_name], formula(OPS[op_name], attrs))
    return compute.is_complex and isinstance(node, ast.Call) and node.func.id == "abs"


def compute_dtype(op_name: str, dtypes: Sequence[DType]) -> DType:
    """The dtype a call with operands of ``dtypes`` (one per tensor parameter) computes in: the first
    promoted operand's."""
    op = OPS[op_name]
    promoted = [dt for position, dt in zip(op.tensor_positions, dtypes)
                if op.params[position].type.startswith("Tensor")]
    return (promoted or list(dtypes))[0]


def one_step_program(op_name: str, dtypes: Sequence[DType], attrs: tuple, shape: tuple = ()) -> ElementwiseProgram:
    """``op_name`` called with these converted attribute values on operands of ``dtypes``, all of ``shape``,
    as a program of one step."""
    compute = compute_dtype(op_name, dtypes)
    out = bool_ if answers_truth(op_name, attrs) else \
        compute.to_real() if answers_magnitude(op_name, attrs, compute) else compute
    step = Step(op_name, tuple(("input", k) for k in range(len(dtypes))), tuple(attrs), compute, out)
    return ElementwiseProgram(tuple((shape, dt) for dt in dtypes), (step,), (0,), shape)


def c_value_function(program: ElementwiseProgram, dialect: CDialect, name: str) -> str:
    """C source of ``T name(T0 x0, ...)``, the program's single output as a value (``render_c`` writes
    outputs through pointers), preceded by the dialect's helpers and the element function it calls."""
    types = dialect.types
    out = types[value_dtype(program.steps[program.outputs[0]].out).name]
    params = ", ".join(f"{types[value_dtype(dt).name]} x{k}" for k, (_, dt) in enumerate(program.inputs))
    args = "".join(f"x{k}, " for k in range(len(program.inputs)))
    return (f"{dialect.helpers}{render_c(program, dialect, f'{name}_element')}"
            f"{dialect.qualifier} {out} {name}({params}) {{\n    {out} y;\n    {name}_element({args}&y);\n"
            f"    return y;\n}}\n")


__all__ = ["answers_truth", "c_value_function", "compute_dtype", "one_step_program"]
