"""An op's composite evaluated from its scalar formula, so that the formula is the op's one definition.

An op that declares ``scalar=`` (``ember.dispatch.fusion``'s formula language) needs no composite of its own:
``formula_composite(name)`` computes the formula op by op over ``F``, one call per node (``+`` is ``add``,
``max`` is ``maximum``, ``where`` is ``where``, ``and`` is ``logical_and`` ...). Autograd differentiates those
calls as it would the same calls written by hand, and a backend's kernels run each of them. A declaration
passes it as the op's composite, wrapped where the op's dtype handling lies outside the formula (``in_opmath``:
half precision computed in float32; ``floating``: integers as floats).

The calls are those a hand composite would make: identical subexpressions are computed once, Python numbers
(constants, attributes, and a tensor parameter passed a number) stay numbers with their arithmetic done in
Python, and a ``where`` whose condition is a Python bool computes only the branch it picks. Each formula is
compiled once per pattern of number operands into a plain Python function of those calls, so a derived
composite costs what the hand-written one did, and a dict lookup.

``HAND_COMPOSITES`` lists the ops with a formula that keep a composite written by hand, each with the reason.
"""
from __future__ import annotations

import ast
import inspect
from typing import Any, Callable

from .execution import links
from .fusion import FUNCTIONS, FormulaError, formula, parse_formula
from .ops.namespace import F
from .schema import OPS, REQUIRED, OpDef

#: The ops with a scalar formula whose composite is written by hand: op name -> why the formula cannot be it.
HAND_COMPOSITES: dict[str, str] = {
    "rsqrt": "the formula's rsqrt is the op itself; the composite is reciprocal(sqrt(x)), differentiated "
             "through reciprocal's derivative",
    "sigmoid": "the formula's sigmoid is the op itself; the composite converts integers to float before -x "
               "(-x of int8 -128 wraps)",
    "isinf": "abs(x) == inf is two ops; the formula's NaN-safe x == x and x - x != 0 is four",
    "elu": "where(x > 0, ...) gives the gradient at 0 to the expm1 branch; the formula's max + expm1 splits "
           "it between max's and min's ties",
    "silu": "x * sigmoid(x) calls the sigmoid op (one kernel, its own derivative); the formula divides by "
            "1 + exp(-x), which rounds differently",
    "mish": "calls the softplus op (one kernel, its own threshold); the formula spells softplus out",
    "softplus": "returns x itself above the threshold; the formula (the CPU kernel's) masks the log1p term "
                "and gives (x * beta) / beta, which rounds where beta is not a power of two",
    "gelu_backward": "x * (exp(-x^2/2) * c) in the composite, (x * exp(-x^2/2)) * c in the formula: the "
                     "products round differently",
    "celu": "where(x > 0, x, ...) is x for any alpha; the formula's x + expm1(0) * alpha is NaN for an "
            "infinite alpha",
    "frac": "x - trunc(x) calls the trunc op (one kernel where a backend has it); the formula has no trunc "
            "and spells it as where(x < 0, ceil(x), floor(x))",
    "signbit": "integers are x < 0 alone; the formula's pow(x, -1) is not defined for integer 0",
    "copysign": "calls the signbit op (one kernel where a backend has it); the formula spells it out",
    "heaviside": "promotes both operands and casts the step to their dtype; the formula's where(x > 0, 1, 0) "
                 "of numbers has no dtype outside a compute dtype",
    "fmax": "one maximum for integers (no NaN) and operands promoted first; the formula tests for NaN always",
    "fmin": "one minimum for integers (no NaN) and operands promoted first; the formula tests for NaN always",
    "clamp_min": "calls clamp, whose gradient passes where input equals the bound; maximum splits ties",
    "clamp_max": "calls clamp, whose gradient passes where input equals the bound; minimum splits ties",
    "rsub": "one sub call with its alpha; the formula multiplies by alpha first (two ops)",
}

#: The op each formula function and operator calls.
_CALLS = {name: name for name in FUNCTIONS} | {"max": "maximum", "min": "minimum"}
_BINARY = {ast.Add: ("add", "+"), ast.Sub: ("sub", "-"), ast.Mult: ("mul", "*"), ast.Div: ("div", "/")}
_COMPARE = {ast.Lt: ("lt", "<"), ast.LtE: ("le", "<="), ast.Gt: ("gt", ">"), ast.GtE: ("ge", ">="),
            ast.Eq: ("eq", "=="), ast.NotEq: ("ne", "!=")}
_BOOLEAN = {ast.And: ("logical_and", "and"), ast.Or: ("logical_or", "or")}


def formula_composite(name: str) -> Callable[..., Any]:
    """The composite of op ``name``: its formula for the call's attributes, computed over ``F``."""
    compiled: dict[tuple, Callable] = {}  # (formula text, bit mask of tensor parameters holding numbers) -> function
    resolved: list = []  # the op and the Tensor class, found on the first call (both are made after this)

    def composite(*args, **kwargs):
        if not resolved:
            resolved.extend((OPS[name], links.tensor.type))
        op, tensor = resolved
        values = args if len(args) == len(op.params) and not kwargs else _bound(op, args, kwargs)
        numbers = 0
        for i in op.tensor_positions:
            numbers = 2 * numbers + (not isinstance(values[i], tensor))
        scalar = op.scalar
        key = (scalar if type(scalar) is str else formula(op, tuple([values[i] for i in op.attr_positions])), numbers)
        function = compiled.get(key)
        if function is None:
            function = compiled[key] = _compile(op, *key)
        return function(*values)

    composite.__name__ = composite.__qualname__ = f"{name}_from_formula"
    composite.__doc__ = f"{name}'s scalar formula, computed op by op over F (ember.dispatch.formula_composite)."
    composite.formula_of = name
    return composite


def _compile(op: OpDef, text: str | None, numbers: int) -> Callable[..., Any]:
    if text is None:
        raise FormulaError(f"{op.name}: no formula for the attributes of this call, so no composite")
    count = len(op.tensor_positions)
    return compile_formula(op, text, tuple(bool(numbers >> (count - 1 - k) & 1) for k in range(count)))


def derived_from_formula(op: OpDef) -> bool:
    """Whether ``op``'s composite is its formula (``formula_composite``), under any wrappers."""
    return op.composite is not None and getattr(inspect.unwrap(op.composite), "formula_of", None) == op.name


def _bound(op: OpDef, args: tuple, kwargs: dict) -> tuple:
    """The call's values in parameter order, defaults filled in (the dispatcher passes them all)."""
    if len(args) == len(op.params) and not kwargs:
        return args
    values = list(args) + [kwargs.get(p.name, p.default) for p in op.params[len(args):]]
    missing = [p.name for p, v in zip(op.params, values) if v is REQUIRED]
    if missing:
        raise TypeError(f"{op.name}: missing {', '.join(missing)}")
    return tuple(values)


def compile_formula(op: OpDef, text: str, numbers: tuple) -> Callable[..., Any]:
    """``text`` (a formula of ``op``) as ``function(*values)`` making the ops' calls; ``numbers`` says which
    tensor parameters hold Python numbers (attributes always do)."""
    is_number = {op.params[i].name: n for i, n in zip(op.tensor_positions, numbers)}
    is_number.update((op.params[i].name, True) for i in op.attr_positions)
    writer = _Writer(op.name, is_number)
    result, _ = writer.value(parse_formula(op, text), {})
    names = [p.name for p in op.params]
    source = "\n".join([f"def {op.name}_from_formula({', '.join(names)}):", *writer.lines, f"    return {result}"])
    namespace: dict[str, Any] = {"F": F, "_K": tuple(writer.constants)}
    exec(compile(source, f"<formula of {op.name}: {text}>", "exec"), namespace)
    function = namespace[f"{op.name}_from_formula"]
    function.source = source
    return function


class _Writer:
    """Writes a formula as Python statements, one ``F`` call (or Python operation on numbers) each."""

    def __init__(self, op_name: str, is_number: dict[str, bool]):
        self.op_name = op_name
        self.is_number = is_number
        self.lines: list[str] = []
        self.constants: list = []
        self.count = 0

    def value(self, node: ast.expr, known: dict, depth: int = 1) -> tuple[str, bool]:
        """The variable (or literal) holding ``node``'s value, and whether it is a Python number. ``known``
        maps the subexpressions already computed in the block being written (indented ``depth``) to theirs."""
        if isinstance(node, ast.Constant):
            self.constants.append(node.value)
            return f"_K[{len(self.constants) - 1}]", True
        if isinstance(node, ast.Name):
            return node.id, self.is_number[node.id]
        key = ast.dump(node)
        if key in known:
            return known[key]
        if isinstance(node, ast.Call) and node.func.id == "where":
            result = self._where(node, known, depth)
        else:
            expression, number = self._expression(node, known, depth)
            result = (self._assign(expression, depth), number)
        known[key] = result
        return result

    def _expression(self, node: ast.expr, known: dict, depth: int) -> tuple[str, bool]:
        def operands(*children):
            values = [self.value(child, known, depth) for child in children]
            return [v for v, _ in values], all(n for _, n in values)

        if isinstance(node, ast.BinOp) or isinstance(node, ast.Compare):
            pair = _BINARY[type(node.op)] if isinstance(node, ast.BinOp) else _COMPARE[type(node.ops[0])]
            (a, b), number = operands(*((node.left, node.right) if isinstance(node, ast.BinOp)
                                        else (node.left, node.comparators[0])))
            return (f"{a} {pair[1]} {b}", True) if number else (f"F.{pair[0]}({a}, {b})", False)
        if isinstance(node, ast.UnaryOp):
            (a,), number = operands(node.operand)
            if isinstance(node.op, ast.USub):
                return (f"-{a}", True) if number else (f"F.neg({a})", False)
            return (f"not {a}", True) if number else (f"F.logical_not({a})", False)
        if isinstance(node, ast.BoolOp):
            values, number = operands(*node.values)
            f_name, word = _BOOLEAN[type(node.op)]
            expression = values[0]
            for other in values[1:]:
                expression = f"({expression} {word} {other})" if number else f"F.{f_name}({expression}, {other})"
            return (f"bool{expression}", True) if number else (expression, False)
        called = _CALLS[node.func.id]
        if called == self.op_name:
            raise FormulaError(f"{called}: its formula calls {node.func.id}, the op itself: it needs a composite")
        args, _ = operands(*node.args)  # a call: always the op (a formula function of numbers alone is no use)
        return f"F.{called}({', '.join(args)})", False

    def _where(self, node: ast.Call, known: dict, depth: int) -> tuple[str, bool]:
        condition, number = self.value(node.args[0], known, depth)
        if not number:
            (a, _), (b, _) = (self.value(arg, known, depth) for arg in node.args[1:])
            return self._assign(f"F.where({condition}, {a}, {b})", depth), False
        # a condition known in Python: compute only the branch it picks (its subexpressions stay in that branch)
        result = self._name()
        numbers = []
        for header, branch in ((f"if {condition}:", node.args[1]), ("else:", node.args[2])):
            self.lines.append("    " * depth + header)
            value, branch_number = self.value(branch, dict(known), depth + 1)
            self.lines.append("    " * (depth + 1) + f"{result} = {value}")
            numbers.append(branch_number)
        return result, all(numbers)

    def _assign(self, expression: str, depth: int) -> str:
        name = self._name()
        self.lines.append("    " * depth + f"{name} = {expression}")
        return name

    def _name(self) -> str:
        self.count += 1
        return f"t{self.count}"


__all__ = ["HAND_COMPOSITES", "compile_formula", "derived_from_formula", "formula_composite"]
