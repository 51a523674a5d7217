"""Typed signatures for the stubs: from the op schema, from ``inspect``, or from both merged.

Where a callable's parameters come from, in order:
- it carries its ``OpDef`` as ``.op`` (every function of ``ember.dispatch.ops.F``): the schema's
  parameters, typed from their schema types;
- its Python signature (``inspect.signature``), each parameter typed by its annotation, or else, when
  the callable is a Python overload of an op (the same name, or ``name_`` for an op's in-place form),
  by the op's parameter of the same name. A ``*size`` or ``*operands`` that spreads a list parameter
  of the op takes its element type; a ``*args`` that forwards to the op stands for the op's
  parameters and a ``**kwargs`` for those not named yet, as keywords;
- ``Any`` for whatever neither says.
A schema parameter named after a Python keyword (``random_``'s ``from``) is written ``from_``.
"""
from __future__ import annotations

import inspect
import keyword
from dataclasses import dataclass, replace
from typing import Any, Callable

from ..dispatch.schema import OPS, REQUIRED, OpDef, Param
from .names import Namespace, render_annotation, scope_of

_P = inspect.Parameter
POSITIONAL, KEYWORD, VAR_POSITIONAL, VAR_KEYWORD = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY, _P.VAR_POSITIONAL,
                                                    _P.VAR_KEYWORD)
WIDTH = 110  # longer ``def`` lines are written one parameter a line


@dataclass(frozen=True)
class Arg:
    name: str
    kind: Any  # an inspect.Parameter kind
    type: str | None  # None: unannotated (self)
    default: str | None = None  # the default as stub source; None: required


@dataclass(frozen=True)
class Signature:
    args: tuple[Arg, ...]
    returns: str

    def method(self) -> Signature:
        """The same callable bound to a tensor: its first parameter becomes ``self``."""
        first, rest = self.args[0], self.args[1:]
        if first.kind == VAR_POSITIONAL:  # (*args) forwarded: self is taken from it
            return replace(self, args=(Arg("self", POSITIONAL, None),) + self.args)
        return replace(self, args=(Arg("self", POSITIONAL, None),) + rest)


class Types:
    """The type expressions of one stub: schema types, ``Tensor``, numbers, devices."""

    def __init__(self, names: Namespace, tensor: type, classes: dict[str, type]) -> None:
        self.names, self.tensor_class, self.classes = names, tensor, classes

    @property
    def tensor(self) -> str:
        return self.names.of(self.tensor_class)

    def builtin(self, name: str) -> str:
        return self.names.imported("builtins", name)

    @property
    def number(self) -> str:
        return self.names.imported("ember.tensor", "_Number")

    def sequence(self, element: str) -> str:
        return f"{self.names.imported('collections.abc', 'Sequence')}[{element}]"

    def schema(self, ptype: str) -> str:
        """The annotation of a schema parameter type (see ``ember.dispatch.schema``)."""
        base = ptype.rstrip("?") if ptype != "Index?[]" else ptype
        optional = ptype.endswith("?") and ptype != "Index?[]"
        integer, tensor = self.builtin("int"), self.tensor
        text = {
            "Tensor": f"{tensor} | {self.number}",
            "Index": tensor,
            "Tensor[]": self.sequence(tensor),
            "Index?[]": self.sequence(f"{tensor} | None"),
            "Scalar": self.number,
            "int": integer,
            "int[]": f"{integer} | {self.sequence(integer)}",
            "dim": integer,
            "dim[]": f"{integer} | {self.sequence(integer)}",
            "bool": self.builtin("bool"),
            "float": self.builtin("float"),
            "str": self.builtin("str"),
            "dtype": self.names.of(self.classes["dtype"]),
            "device": f"{self.names.of(self.classes['device'])} | {self.builtin('str')}",
            "Generator": self.names.of(self.classes["Generator"]),
            "Any": self.names.imported("typing", "Any"),
        }[base]
        return f"{text} | None" if optional else text

    def element(self, ptype: str) -> str:
        """The type of one item of a list parameter spread as ``*name``: the item, or the whole list."""
        item = {"Tensor[]": self.tensor, "int[]": self.builtin("int"), "dim[]?": self.builtin("int")}.get(ptype)
        return self.schema(ptype) if item is None else f"{item} | {self.sequence(item)}"

    def outputs(self, op: OpDef) -> str:
        if op.outputs == ("*",):
            return f"{self.builtin('tuple')}[{self.tensor}, ...]"
        if len(op.outputs) > 1:
            return self.names.imported("ember.tensor", result_class_name(op))
        return self.tensor


def result_class_name(op: OpDef) -> str:
    """The stub's NamedTuple for a multi-output op's result (``max`` -> ``_MaxResult``)."""
    return "_" + "".join(part.capitalize() for part in op.name.split("_")) + "Result"


def default_source(value: Any) -> str:
    """A default as stub source: the literal when it reads back equal, else ``...``."""
    if value is REQUIRED or value is _P.empty:
        raise ValueError("required parameters have no default")
    text = repr(value)
    try:
        import ast
        return text if ast.literal_eval(text) == value and type(ast.literal_eval(text)) is type(value) else "..."
    except (ValueError, SyntaxError):
        return "..."


def _safe(name: str) -> str:
    return f"{name}_" if keyword.iskeyword(name) else name


def _with_none(text: str, default: str | None) -> str:
    return f"{text} | None" if default == "None" and not text.endswith("None") and text != "Any" else text


def _schema_arg(p: Param, types: Types, kind=None) -> Arg:
    default = None if p.default is REQUIRED else default_source(p.default)
    kind = kind or (KEYWORD if p.kw_only else POSITIONAL)
    return Arg(_safe(p.name), kind, _with_none(types.schema(p.type), default), default)


def from_op(op: OpDef, types: Types, returns: str | None = None, with_out: bool = False) -> Signature:
    """The op's parameters, and for a function that takes it the dispatcher's ``out=`` keyword."""
    args = tuple(_schema_arg(p, types) for p in op.params)
    if with_out:
        several = len(op.outputs) > 1 or op.outputs == ("*",)
        written = f"{types.names.imported('typing', 'Sequence')}[{types.tensor}]" if several else types.tensor
        args += (Arg("out", KEYWORD, f"{written} | None", "None"),)
    return Signature(args, returns or types.outputs(op))


def op_named(*names: str) -> tuple[OpDef | None, bool]:
    """The op a callable named ``name`` overloads, and whether it is that op's in-place form."""
    for name in names:
        if name in OPS:
            return OPS[name], False
        if name.endswith("_") and name[:-1] in OPS:
            return OPS[name[:-1]], True
    return None, False


def from_python(function: Callable, types: Types, op: OpDef | None, inplace: bool,
                skip_first: bool = False) -> Signature:
    """The Python signature of ``function``, typed by its annotations and else by ``op``'s schema."""
    signature = inspect.signature(function, follow_wrapped=False)
    scope = scope_of(getattr(inspect.unwrap(function), "__globals__", {}))
    params = list(signature.parameters.values())[1 if skip_first else 0:]
    schema = {p.name: p for p in op.params} if op is not None else {}
    forwarded = list(op.params[1 if skip_first else 0:]) if op is not None else []
    named = {p.name for p in params}
    args: list[Arg] = []
    wider = False  # takes more than the op does: it may return something else than the op's result

    def spread(kind_for_keywords) -> None:
        """The op's parameters the Python signature does not name, in place of ``*args``/``**kwargs``."""
        for p in forwarded:
            if p.name not in named and _safe(p.name) not in {a.name for a in args}:
                args.append(_schema_arg(p, types, KEYWORD if kind_for_keywords else None))
                named.add(p.name)

    for p in params:
        annotation = None if p.annotation is p.empty else render_annotation(p.annotation, types.names, scope)
        default = None if p.default is p.empty else default_source(p.default)
        listed = schema.get(p.name) or _first_list(forwarded, named)
        if p.kind == VAR_POSITIONAL and annotation is None and op is not None and p.name != "args" and listed:
            named.add(listed.name)  # ``*size`` (or ``*dims``) spreads the op's list parameter
            args.append(Arg(listed.name, VAR_POSITIONAL, types.element(listed.type)))
        elif p.kind == VAR_POSITIONAL and annotation is None and op is not None:
            spread(kind_for_keywords=False)
        elif p.kind == VAR_KEYWORD and annotation is None and op is not None:
            spread(kind_for_keywords=True)
        elif p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
            args.append(Arg(p.name, p.kind, _any(annotation, types)))
        else:
            known = schema.get(p.name)
            wider = wider or known is None or (known.default is REQUIRED and default is not None)
            ptype = annotation or (types.schema(known.type) if known is not None else None)
            args.append(Arg(p.name, _kind(p.kind), _with_none(_any(ptype, types), default), default))
    if signature.return_annotation is not signature.empty:
        returns = render_annotation(signature.return_annotation, types.names, scope)
    elif op is not None and (inplace or len(op.outputs) == 1 or not wider):
        returns = types.tensor if inplace else types.outputs(op)
    else:
        returns = types.names.imported("typing", "Any")
    return Signature(_ordered(args), returns)


def _first_list(params: list[Param], named: set[str]) -> Param | None:
    return next((p for p in params if p.type in ("int[]", "Tensor[]") and p.name not in named), None)


def _any(text: str | None, types: Types) -> str:
    return types.names.imported("typing", "Any") if text in (None, "Any") else text


def _kind(kind):
    return POSITIONAL if kind == _P.POSITIONAL_ONLY else kind


def _ordered(args: list[Arg]) -> tuple[Arg, ...]:
    """Positional parameters first, and no required one after a default (a keyword then)."""
    positional = [a for a in args if a.kind == POSITIONAL]
    rest = [a for a in args if a.kind != POSITIONAL]
    seen_default, fixed = False, []
    for a in positional:
        if a.default is None and seen_default:
            rest.append(replace(a, kind=KEYWORD))
            continue
        seen_default = seen_default or a.default is not None
        fixed.append(a)
    order = {VAR_POSITIONAL: 0, KEYWORD: 1, VAR_KEYWORD: 2}
    return tuple(fixed + sorted(rest, key=lambda a: order[a.kind]))


def render_def(name: str, signature: Signature, indent: str = "", decorators: tuple[str, ...] = (),
               comment: str = "") -> list[str]:
    """``def name(params) -> returns: ...``, wrapped one parameter a line when long."""
    parts, star = [], False
    for a in signature.args:
        if a.kind == KEYWORD and not star:
            parts.append("*")
        star = star or a.kind in (KEYWORD, VAR_POSITIONAL)
        prefix = {VAR_POSITIONAL: "*", VAR_KEYWORD: "**"}.get(a.kind, "")
        text = prefix + a.name + ("" if a.type is None else f": {a.type}")
        if a.default is not None:
            text += f" = {a.default}" if a.type is not None else f"={a.default}"
        parts.append(text)
    tail = f" -> {signature.returns}: ...{comment}"
    lines = [f"{indent}@{d}" for d in decorators]
    one_line = f"{indent}def {name}({', '.join(parts)}){tail}"
    if len(one_line) <= WIDTH:
        return lines + [one_line]
    return lines + [f"{indent}def {name}("] + [f"{indent}    {p}," for p in parts] + [f"{indent}){tail}"]
