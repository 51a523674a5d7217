"""Elementwise fusion: the scalar formula language of the op schema, the program a backend fuses, and the
lowering its renderers share (the renderers themselves, Python for numba and C for OpenCL and CUDA, are
backend code: ``ember.backends.codegen``).

An elementwise op declares ``OpDef.scalar``: its value for one element, as an expression over its parameter
names (tensor parameters stand for the element values, attributes for their values) built from numbers,
``+ - * /``, unary ``-``, one comparison ``< <= > >= == !=`` (a boolean), ``and or not`` on booleans,
parentheses and calls of ``FUNCTIONS``. A callable ``scalar`` gets the op's attribute values by keyword and
returns the expression, or None where that attribute combination has none (div's rounding modes).

The compiler groups a chain of such calls into an :class:`ElementwiseProgram` and asks the backend's
``fuse_elementwise`` hook for one kernel computing it. Every renderer goes through one lowering to
single-assignment form (``lower``), so they agree on every cast:

- every operand is converted to its step's compute dtype first (numbers and attributes included, converted
  when the program is rendered, wrapping into integer dtypes as NumPy's ``astype`` does), every arithmetic
  result is cast back to the compute dtype (so integers wrap as the op-by-op kernels do), and every step's
  value is cast to the step's ``out`` dtype;
- float16 and bfloat16 compute in float32: inputs and outputs of those dtypes are float32 values in the
  rendered code (the caller converts on load and store) and intermediate results are not rounded to half,
  so fused chains are at least as accurate as op-by-op ones;
- ``max``/``min`` propagate NaN (NumPy's maximum/minimum, not C's fmax) and give the second operand where
  the two are equal (``max(0.0, -0.0)`` is ``-0.0``, as NumPy's vector loops and the OpenCL op-by-op kernels
  give); ``where`` evaluates both branches;
  ``sigmoid(x)`` is ``1 / (1 + exp(-x))``, ``rsqrt(x)`` is ``1 / sqrt(x)``; ``floor``/``ceil`` of integers
  are the integers themselves;
- ``pow`` of integers is not rendered (integer powers raise on negative exponents op by op): rendering
  such a program raises :class:`UnsupportedProgram`, and a backend hook answers None for it;
- complex values (complex64, complex128) take ``+ - * /``, ``== !=``, ``where`` and the functions of
  ``COMPLEX_FUNCTIONS``; ``abs`` of a complex value is its (real) magnitude. Ordering comparisons, max/min,
  floor/ceil and erf of complex values are not defined (PyTorch refuses them): :class:`UnsupportedProgram`,
  as for the ops of ``REAL_ONLY_FORMULAS`` computing in complex.

A program may end with a reduction of its single output (``reduction=(op, dims, keepdim)``, op one of
``REDUCTIONS``): the result then has the reduced shape (``result_shape()``) and the reduction's dtype
(``result_dtype()``: the sum of bools and integers is int64, as ``torch.sum``). Both renderers then also
write ``<name>_init()``, ``<name>_combine(acc, value)`` and ``<name>_finish(acc, count)``: a kernel starts an
accumulator per result element, combines the element function's output of every reduced position into it
and finishes it with the number of reduced positions. Sums accumulate in float64 for floats (at least as
accurate as the op-by-op kernels' pairwise float32 sums) and in int64 for integers (wrapping); amax/amin
keep the value's dtype and propagate NaN; mean divides the sum by the count. Complex sums accumulate in
complex128.
"""
from __future__ import annotations

import ast
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .schema.dtypes import bfloat16, bool_, complex128, dtype as DType, float16, float32, float64, int64
from .schema.errors import DtypeError, EmberError, ShapeError
from .schema import OPS, OpDef

#: The functions a formula may call, by arity.
FUNCTIONS: dict[str, int] = {
    "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "erf": 1, "abs": 1,
    "sin": 1, "cos": 1, "tan": 1, "floor": 1, "ceil": 1, "sigmoid": 1, "pow": 2, "max": 2, "min": 2, "where": 3,
}
#: The functions of complex values (the others are not defined on complex numbers).
COMPLEX_FUNCTIONS = frozenset(("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "abs", "sin", "cos", "tan",
                               "sigmoid", "pow", "where"))
#: Ops whose formula holds for real numbers only: their complex composite is another (atanh's 2z / (1 - z)
#: overflows and loses the sign of a zero at the branch cuts; isinf's x - x != 0 misses inf + nan i).
REAL_ONLY_FORMULAS = frozenset({"atanh", "isinf"})
#: The reductions a program may end with (the schema ops whose semantics they have).
REDUCTIONS = ("sum", "mean", "amax", "amin")
_ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class FormulaError(EmberError, ValueError):
    """A scalar formula that is not in the formula language."""


class UnsupportedProgram(EmberError):
    """A program a renderer cannot express (integer pow); the backend hook then declines it."""


# -- the formula language -------------------------------------------------------------------------------

_parsed: dict[tuple[str, str], ast.expr] = {}


def parse_formula(op: OpDef, text: str) -> ast.expr:
    """The checked syntax tree of ``text``, a formula of ``op``; FormulaError names the op and the problem."""
    key = (op.name, text)
    tree = _parsed.get(key)
    if tree is None:
        try:
            tree = ast.parse(text, mode="eval").body
        except SyntaxError as e:
            raise FormulaError(f"{op.name}: formula {text!r} is not an expression ({e.msg})") from None
        _check(op, text, tree, {p.name for p in op.params})
        _parsed[key] = tree
    return tree


def _check(op: OpDef, text: str, node: ast.expr, names: set[str]) -> None:
    def fail(why: str):
        raise FormulaError(f"{op.name}: formula {text!r} {why}")

    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            fail(f"has the constant {node.value!r}; only int and float numbers are allowed")
        return
    if isinstance(node, ast.Name):
        if node.id not in names:
            fail(f"names {node.id!r}, which is not a parameter of {op.signature}")
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        children = [node.operand]
    elif isinstance(node, ast.BoolOp):
        children = node.values
    elif isinstance(node, ast.Compare):
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARISONS:
            fail("chains comparisons or uses an unknown one; write one of < <= > >= == != at a time")
        children = [node.left, node.comparators[0]]
    elif isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        if name not in FUNCTIONS:
            fail(f"calls unknown function {name!r} (known: {', '.join(FUNCTIONS)})")
        if node.keywords or len(node.args) != FUNCTIONS[name]:
            fail(f"calls {name} with {len(node.args)} argument(s) (and {len(node.keywords)} keywords); "
                 f"it takes {FUNCTIONS[name]} positional")
        children = node.args
    else:
        fail(f"uses {ast.unparse(node)!r}, which is not in the formula language "
             "(numbers, parameter names, + - * /, unary -, comparisons, and/or/not, calls of FUNCTIONS)")
    for child in children:
        _check(op, text, child, names)


def formula(op: OpDef, attrs: tuple) -> str | None:
    """The formula of ``op`` called with these converted attribute values (attr_positions order), or None."""
    scalar = op.scalar
    if scalar is None or isinstance(scalar, str):
        return scalar
    return scalar(**{op.params[i].name: value for i, value in zip(op.attr_positions, attrs)})


def fusible(op: OpDef, attrs: tuple) -> bool:
    """Whether a call of ``op`` with these converted attribute values has a formula (which is checked)."""
    text = formula(op, attrs)
    if text is None:
        return False
    parse_formula(op, text)
    return True


# -- the program --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One op of a program. ``operands`` has one entry per tensor parameter of the op, in order:
    ``("input", k)`` (the program's input k), ``("step", j)`` (an earlier step's value) or
    ``("number", value)`` (a Python number)."""

    op: str
    operands: tuple
    attrs: tuple
    compute: DType
    out: DType


@dataclass(frozen=True)
class ElementwiseProgram:
    """A chain of elementwise steps over inputs that broadcast to ``shape``; ``outputs`` index ``steps``.
    ``reduction``: None, or ``(op, dims, keepdim)`` reducing the single output (op in ``REDUCTIONS``, dims
    distinct and ascending in ``range(len(shape))``)."""

    inputs: tuple  # ((shape, dtype), ...)
    steps: tuple
    outputs: tuple
    shape: tuple
    reduction: tuple | None = None
    _key: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ndim = len(self.shape)
        for k, (shape, _) in enumerate(self.inputs):
            if len(shape) > ndim or any(s not in (1, n) for s, n in zip(shape[::-1], self.shape[::-1])):
                raise ShapeError(f"fusion: input {k} of shape {tuple(shape)} does not broadcast to the "
                                 f"program's shape {tuple(self.shape)}")
        for j, step in enumerate(self.steps):
            op = OPS.get(step.op)
            if op is None or op.scalar is None:
                raise FormulaError(f"fusion: step {j} calls {step.op!r}, which has no scalar formula")
            if len(step.operands) != len(op.tensor_positions):
                raise FormulaError(f"fusion: step {j} ({step.op}) has {len(step.operands)} operands; "
                                   f"{op.signature} takes {len(op.tensor_positions)} tensors")
            for kind, value in step.operands:
                if (kind == "step" and not 0 <= value < j) or (kind == "input" and not 0 <= value < len(self.inputs)) \
                        or kind not in ("step", "input", "number"):
                    raise FormulaError(f"fusion: step {j} ({step.op}) has the bad operand {(kind, value)!r}")
        if not self.outputs or any(not 0 <= j < len(self.steps) for j in self.outputs):
            raise FormulaError(f"fusion: outputs {self.outputs!r} must index the {len(self.steps)} steps")
        if self.reduction is not None:
            self._check_reduction()

    def _check_reduction(self) -> None:
        reduction, shape = self.reduction, tuple(self.shape)
        if not (isinstance(reduction, tuple) and len(reduction) == 3):
            raise FormulaError(f"fusion: reduction {reduction!r} must be a tuple (op, dims, keepdim)")
        op, dims, keepdim = reduction
        if op not in REDUCTIONS:
            raise FormulaError(f"fusion: reduction {op!r} is not one of {', '.join(REDUCTIONS)}")
        if len(self.outputs) != 1:
            raise FormulaError(f"fusion: a {op} reduces a single output; the program has outputs {self.outputs!r}")
        if not isinstance(dims, tuple) or not dims or any(type(d) is not int for d in dims) \
                or list(dims) != sorted(set(dims)) or dims[0] < 0 or dims[-1] >= len(shape):
            raise ShapeError(f"fusion: {op} over dims {dims!r}: the dims must be distinct, ascending and within "
                             f"the program's shape {shape} (0 to {len(shape) - 1})")
        if not isinstance(keepdim, bool):
            raise FormulaError(f"fusion: {op}'s keepdim must be a bool, not {keepdim!r}")
        value = self.steps[self.outputs[0]].out
        if op == "mean" and value.kind not in ("float", "complex"):
            raise DtypeError(f"fusion: mean of {value.name} values: mean takes floating-point or complex values only")
        if op in ("amax", "amin") and any(shape[d] == 0 for d in dims):
            raise ShapeError(f"fusion: {op} over dims {dims!r} of shape {shape}: a dim to reduce is empty")

    def result_shape(self) -> tuple:
        """The shape of every result: ``shape``, or the reduced shape."""
        if self.reduction is None:
            return tuple(self.shape)
        _, dims, keepdim = self.reduction
        if keepdim:
            return tuple(1 if d in dims else n for d, n in enumerate(self.shape))
        return tuple(n for d, n in enumerate(self.shape) if d not in dims)

    def result_dtype(self, i: int = 0) -> DType:
        """Output ``i``'s dtype: its step's ``out``, or the reduction's (sums of bools and integers: int64)."""
        value = self.steps[self.outputs[i]].out
        if self.reduction is not None and self.reduction[0] == "sum" and value.kind in ("bool", "int"):
            return int64
        return value

    def key(self) -> str:
        """A stable text naming the program, shapes included: the same in every process."""
        if not self._key:
            inputs = ",".join(f"{dt.name}{list(shape)}" for shape, dt in self.inputs)
            steps = ";".join(f"{s.op}({','.join(f'{k}:{v!r}' for k, v in s.operands)}|{s.attrs!r})"
                             f"{s.compute.name}->{s.out.name}" for s in self.steps)
            reduced = "" if self.reduction is None else \
                f" reduction={self.reduction[0]}{list(self.reduction[1])}keepdim={self.reduction[2]}"
            object.__setattr__(self, "_key", f"shape={list(self.shape)} inputs={inputs} steps={steps} "
                                             f"outputs={list(self.outputs)}{reduced}")
        return self._key

    def digest(self) -> str:
        """A short hash of ``key()``, for file names."""
        return hashlib.sha1(self.key().encode()).hexdigest()[:20]

    def dtypes(self) -> frozenset:
        """Every dtype the program reads, computes in or returns: what a backend checks it can run."""
        return frozenset([dt for _, dt in self.inputs] + [s.compute for s in self.steps] + [s.out for s in self.steps]
                         + [self.result_dtype(i) for i in range(len(self.outputs))])


# -- lowering to single assignments (shared by both renderers) -----------------------------------------

def value_dtype(dt: DType) -> DType:
    """The dtype a value of ``dt`` has in rendered code: half types compute in float32."""
    return float32 if dt in (float16, bfloat16) else dt


@dataclass(frozen=True)
class Instr:
    """``var = <kind>(args)`` of dtype ``dtype``. Kinds: input (args: k), const (value), cast (var),
    arith (symbol, a, b), neg (a), compare (symbol, a, b), and/or (a, b), not (a), call (name, *vars),
    where (c, a, b)."""

    var: str
    dtype: DType
    kind: str
    args: tuple


def convert_constant(value, dt: DType):
    """``value`` converted to ``dt`` as NumPy converts it (integers wrap), as a Python number."""
    return np.array(value).astype(np.dtype("bool" if dt is bool_ else dt.name)).item()


class _Lowering:
    def __init__(self, program: ElementwiseProgram):
        self.program = program
        self.instrs: list[Instr] = []
        self.casts: dict[tuple, str] = {}  # (var, dtype) casts and (dtype, 'const', repr) constants

    def emit(self, dt: DType, kind: str, *args) -> str:
        if kind == "const":  # each constant once
            key = (dt, "const", repr(args[0]))
            if key in self.casts:
                return self.casts[key]
            self.casts[key] = f"v{len(self.instrs)}"
        var = f"v{len(self.instrs)}"
        self.instrs.append(Instr(var, dt, kind, args))
        return var

    def typed(self, var: str) -> DType:
        return self.instrs[int(var[1:])].dtype

    def cast(self, var: str, dt: DType) -> str:
        if self.typed(var) is dt:
            return var
        key = (var, dt)
        if key not in self.casts:
            self.casts[key] = self.emit(dt, "cast", var)
        return self.casts[key]

    def run(self) -> tuple[list[Instr], list[str]]:
        program = self.program
        loaded = [self.emit(value_dtype(dt), "input", k) for k, (_, dt) in enumerate(program.inputs)]
        results: list[str] = []
        for step in program.steps:
            op = OPS[step.op]
            text = formula(op, step.attrs)
            if text is None:
                raise FormulaError(f"fusion: {step.op} has no formula for attributes {step.attrs!r}")
            compute = value_dtype(step.compute)
            if compute.is_complex and step.op in REAL_ONLY_FORMULAS:
                raise UnsupportedProgram(f"fusion: {step.op}'s formula does not hold for complex numbers")
            env: dict[str, Any] = {}
            for position, (kind, value) in zip(op.tensor_positions, step.operands):
                param = op.params[position]
                promoted = param.type.startswith("Tensor")  # Index operands keep their own dtype
                if kind == "number":
                    env[param.name] = self.emit(compute if promoted else bool_, "const",
                                                convert_constant(value, compute if promoted else bool_))
                    continue
                var = loaded[value] if kind == "input" else results[value]
                env[param.name] = self.cast(var, compute) if promoted else var
            for i, value in zip(op.attr_positions, step.attrs):
                env[op.params[i].name] = ("attr", value)
            var = self.expr(op, parse_formula(op, text), env, compute)
            results.append(self.cast(var, value_dtype(step.out)))
        return self.instrs, [results[j] for j in program.outputs]

    def expr(self, op: OpDef, node: ast.expr, env: dict, dt: DType) -> str:
        if isinstance(node, ast.Constant):
            return self.emit(dt, "const", convert_constant(node.value, dt))
        if isinstance(node, ast.Name):
            bound = env[node.id]
            if isinstance(bound, tuple):  # an attribute: a constant of the compute dtype
                return self.emit(dt, "const", convert_constant(bound[1], dt))
            return bound
        if isinstance(node, ast.BinOp):
            a = self.cast(self.expr(op, node.left, env, dt), dt)
            b = self.cast(self.expr(op, node.right, env, dt), dt)
            return self.emit(dt, "arith", _ARITHMETIC[type(node.op)], a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self.emit(dt, "neg", self.cast(self.expr(op, node.operand, env, dt), dt))
        if isinstance(node, ast.UnaryOp):
            return self.emit(bool_, "not", self.cast(self.expr(op, node.operand, env, dt), bool_))
        if isinstance(node, ast.BoolOp):
            kind = "and" if isinstance(node.op, ast.And) else "or"
            values = [self.cast(self.expr(op, v, env, dt), bool_) for v in node.values]
            var = values[0]
            for other in values[1:]:
                var = self.emit(bool_, kind, var, other)
            return var
        if isinstance(node, ast.Compare):
            a = self.cast(self.expr(op, node.left, env, dt), dt)
            b = self.cast(self.expr(op, node.comparators[0], env, dt), dt)
            symbol = _COMPARISONS[type(node.ops[0])]
            if dt.is_complex and symbol not in ("==", "!="):
                raise UnsupportedProgram(f"fusion: {op.name} compares complex values with {symbol}, which is not "
                                         "defined (complex numbers are not ordered)")
            return self.emit(bool_, "compare", symbol, a, b)
        return self.call(op, node, env, dt)

    def call(self, op: OpDef, node: ast.Call, env: dict, dt: DType) -> str:
        name = node.func.id
        if name == "where":
            condition = self.cast(self.expr(op, node.args[0], env, dt), bool_)
            a, b = (self.cast(self.expr(op, arg, env, dt), dt) for arg in node.args[1:])
            return self.emit(dt, "where", condition, a, b)
        if dt.is_complex and name not in COMPLEX_FUNCTIONS:
            raise UnsupportedProgram(f"fusion: {op.name} calls {name} of {dt.name} values, which is not defined "
                                     "on complex numbers")
        args = [self.cast(self.expr(op, arg, env, dt), dt) for arg in node.args]
        if name in ("floor", "ceil") and dt.kind in ("bool", "int"):
            return args[0]
        if name == "abs" and dt.is_complex:  # the magnitude: a real value
            return self.emit(dt.to_real(), "call", "abs", args[0])
        if name == "pow" and dt.kind in ("bool", "int"):
            raise UnsupportedProgram(f"fusion: {op.name} raises integers to powers, which is not rendered "
                                     "(negative integer exponents raise op by op)")
        if name == "rsqrt":
            return self.emit(dt, "arith", "/", self.emit(dt, "const", convert_constant(1, dt)),
                             self.emit(dt, "call", "sqrt", args[0]))
        if name == "sigmoid":
            one = self.emit(dt, "const", convert_constant(1, dt))
            denominator = self.emit(dt, "arith", "+", one, self.emit(dt, "call", "exp", self.emit(dt, "neg", args[0])))
            return self.emit(dt, "arith", "/", one, denominator)
        return self.emit(dt, "call", name, *args)


def lower(program: ElementwiseProgram) -> tuple[list[Instr], list[str]]:
    """The program as single assignments, and the variables holding its outputs."""
    return _Lowering(program).run()


# -- the final reduction (shared by both renderers) -----------------------------------------------------

def accumulator_dtype(program: ElementwiseProgram) -> DType:
    """The dtype the program's reduction accumulates in: float64 for sums and means of floats, int64 for
    sums of bools and integers, complex128 for complex sums, the value's own (float32 for half types) for amax and
    amin."""
    op = program.reduction[0]
    value = value_dtype(program.steps[program.outputs[0]].out)
    if op in ("amax", "amin"):
        if value.is_complex:
            raise UnsupportedProgram(f"fusion: {op} of {value.name} values (complex numbers are not ordered)")
        return value
    if value.is_complex:
        return complex128
    return float64 if value.is_floating_point else int64


def reduction_identity(op: str, dt: DType):
    """What an accumulator of ``dt`` starts from: 0 for sums, the lowest (amax) or highest (amin) value."""
    if op in ("sum", "mean"):
        return 0
    if dt is bool_:
        return op == "amin"
    if dt.is_floating_point:
        return -math.inf if op == "amax" else math.inf
    info = np.iinfo(dt.name)
    return int(info.min if op == "amax" else info.max)


__all__ = ["COMPLEX_FUNCTIONS", "FUNCTIONS", "FormulaError", "UnsupportedProgram", "Step", "ElementwiseProgram",
           "Instr", "REAL_ONLY_FORMULAS", "REDUCTIONS", "accumulator_dtype", "convert_constant", "formula", "fusible",
           "parse_formula", "lower", "reduction_identity", "value_dtype"]
