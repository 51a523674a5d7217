"""PyTorch's schema language for custom ops: parsed into Ember's parameters, and inferred from type hints.

A custom op is declared in the language ``torch.library`` speaks (``"(Tensor x, Tensor? y=None, int[] dims=[],
float a=1.0, *, bool keepdim=False) -> (Tensor, Tensor)"``, ``Tensor(a!)`` for an argument the op writes into),
so that a schema written for PyTorch is accepted as it is and ``infer_schema`` writes the very string PyTorch
writes for the same annotated function. ``parse`` reads such a string; ``Schema.params`` turns it into the
``Param``s of the op's ``OpDef``, whose types the dispatcher knows (a tensor argument is an ``Index``: it takes no
part in type promotion and refuses a Python number, as a PyTorch custom op does).
"""
from __future__ import annotations

import ast
import collections.abc
import inspect
import math
import re
import typing
from dataclasses import dataclass
from types import GenericAlias
from typing import Any, Callable, Iterable

from ..dispatch.schema import REQUIRED, Param
from ..dispatch.schema.dtypes import from_name
from ..dispatch.schema.opdef import split_top_level

#: PyTorch's argument types -> the Ember parameter type. "Any" ones are checked by the op (``Definition``).
PARAM_TYPES = {
    "Tensor": "Index", "Tensor?": "Index?", "Tensor[]": "Tensor[]", "Tensor?[]": "Index?[]",
    "SymInt": "int", "SymInt?": "int?", "SymInt[]": "int[]", "SymInt[]?": "int[]?",
    "int": "int", "int?": "int?", "int[]": "int[]", "int[]?": "int[]?",
    "float": "float", "float?": "float?", "float[]": "Any", "float[]?": "Any",
    "bool": "bool", "bool?": "bool?", "bool[]": "Any", "bool[]?": "Any",
    "str": "str", "str?": "str?", "Scalar": "Scalar", "Scalar?": "Scalar?", "Scalar[]": "Any",
    "ScalarType": "dtype", "ScalarType?": "dtype?", "Device": "device?", "Device?": "device?",
}
#: Names Ember's derivatives reserve for the incoming gradients and the outputs (``OpDef.derivative``).
RESERVED_NAMES = ("grad", "grads", "result", "results")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TYPE = re.compile(r"^(?P<base>[A-Za-z]+)(?:\((?P<alias>[a-z0-9]+)(?P<write>!?)\))?(?P<suffix>(?:\[\d*\]|\?)*)$")


class SchemaError(ValueError):
    """A schema string Ember cannot read, or an annotation with no schema type."""


@dataclass(frozen=True)
class Arg:
    """One argument: its PyTorch type without alias annotation (``Tensor[]``), name, default, and whether the
    op writes into it (``Tensor(a!)``)."""
    name: str
    type: str
    default: Any = REQUIRED
    kw_only: bool = False
    mutated: bool = False
    alias: str | None = None

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("Tensor")


@dataclass(frozen=True)
class Schema:
    """A parsed schema: ``name`` ("" where the string names none), arguments, return types, and the text."""
    name: str
    args: tuple[Arg, ...]
    returns: tuple[str, ...]
    returns_tuple: bool  # written as ``(...)``: a tuple of outputs, even of one, or () for none
    text: str

    @property
    def mutated(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.mutated)

    @property
    def signature(self) -> str:
        """The schema without its name: ``(Tensor x) -> Tensor``."""
        return self.text[self.text.index("("):]

    def params(self, qualname: str) -> tuple[Param, ...]:
        """The Ember parameters of the op ``qualname`` with this schema."""
        out = []
        for a in self.args:
            ember_type = PARAM_TYPES.get(a.type)
            if ember_type is None:
                raise SchemaError(f"{qualname}: argument '{a.name}' has type {a.type}, which Ember's custom ops do "
                                  f"not take (they take {', '.join(PARAM_TYPES)})")
            out.append(Param(a.name, ember_type, a.default, a.kw_only))
        return tuple(out)


def parse(text: str, qualname: str = "") -> Schema:
    """A schema string in PyTorch's language (with or without the op's name) as a ``Schema``."""
    where = qualname or "schema"
    head, arrow, tail = text.partition("->")
    head, tail = head.strip(), tail.strip()
    if not arrow or not head.endswith(")") or "(" not in head:
        raise SchemaError(f"{where}: expected a schema like \"(Tensor x, float alpha=1.0) -> Tensor\", got {text!r}")
    name = head[:head.index("(")].strip()
    if name and "." in name:
        raise SchemaError(f"{where}: overload names (\"{name}\") are not supported; give each op its own name")
    if name and not _IDENTIFIER.match(name):
        raise SchemaError(f"{where}: {name!r} is not an op name")
    args, kw_only, seen = [], False, set()
    for item in split_top_level(head[head.index("(") + 1:-1]):
        if item == "*":
            kw_only = True
            continue
        decl, eq, default_text = item.partition("=")
        parts = decl.split()
        if len(parts) != 2 or not _IDENTIFIER.match(parts[1]):
            raise SchemaError(f"{where}: cannot read the argument {item!r} of {text!r} (expected \"TYPE name\")")
        ptype, alias, mutated = _type(parts[0], where)
        if parts[1] in seen:
            raise SchemaError(f"{where}: argument '{parts[1]}' appears twice in {text!r}")
        seen.add(parts[1])
        length = re.search(r"\[(\d+)\]", parts[0])
        size = int(length[1]) if length else 1
        default = _default(ptype, default_text.strip(), where, parts[1], size) if eq else REQUIRED
        args.append(Arg(parts[1], ptype, default, kw_only, mutated, alias))
    returns, returns_tuple = _returns(tail, where)
    return Schema(name, tuple(args), returns, returns_tuple, text.strip())


def _type(text: str, where: str) -> tuple[str, str | None, bool]:
    """(type without alias annotation, alias set, whether written) of one type: ``Tensor(a!)?`` ->
    (``Tensor?``, "a", True); ``int[2]`` is ``int[]``."""
    m = _TYPE.match(text)
    if m is None:
        raise SchemaError(f"{where}: cannot read the type {text!r}")
    suffix = re.sub(r"\[\d+\]", "[]", m["suffix"])
    if m["alias"] is not None and m["base"] != "Tensor":
        raise SchemaError(f"{where}: only tensors take alias annotations, got {text!r}")
    return m["base"] + suffix, m["alias"], m["write"] == "!"


def _default(ptype: str, text: str, where: str, name: str, length: int = 1):
    """A default value as Python: numbers, bools, None, strings, lists, ``inf``, dtypes (``float32``); a number
    for a list of ``length`` (``int[2] stride=1``) repeated, as PyTorch does."""
    words = {"None": None, "True": True, "False": False, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}
    if text in words:
        return words[text]
    if ptype.startswith("ScalarType"):
        try:
            return from_name(text)
        except TypeError:
            raise SchemaError(f"{where}: argument '{name}' has default {text!r}, which is no dtype") from None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise SchemaError(f"{where}: cannot read the default {text!r} of argument '{name}'") from None
    if ptype.endswith("[]") and isinstance(value, (int, float, bool)):
        return [value] * length
    return value


def _returns(text: str, where: str) -> tuple[tuple[str, ...], bool]:
    if not (text.startswith("(") and text.endswith(")")):
        return (_return_type(text, where),), False
    inner = text[1:-1].strip()
    if inner.startswith("(") and inner.endswith(")"):  # ((Tensor)): a tuple of one, as infer_schema writes it
        inner = inner[1:-1]
    return tuple(_return_type(item, where) for item in split_top_level(inner)), True


def _return_type(text: str, where: str) -> str:
    ptype, alias, _ = _type(text.split()[0], where)
    if alias is not None:
        raise SchemaError(f"{where}: returns an alias of an argument ({text!r}); Ember's custom ops return new "
                          f"tensors, or nothing (-> ()) where they write into their arguments")
    return ptype


# -- inferring a schema from type hints, as PyTorch does ---------------------------------------------------------

def _supported_types() -> dict:
    """Annotation -> schema type, as ``torch._library.infer_schema`` lists them, with Ember's classes."""
    from ..dispatch.schema.device import device
    from ..dispatch.schema.dtypes import dtype
    from ..tensor import Tensor
    number = typing.Union[int, float, bool]
    rows = [(Tensor, "Tensor", True, True, False), (int, "SymInt", True, False, True),
            (float, "float", True, False, True), (bool, "bool", True, False, True), (str, "str", False, False, False),
            (number, "Scalar", True, False, False), (dtype, "ScalarType", False, False, False),
            (device, "Device", False, False, False)]
    table = {}
    for base, name, lists, optional_lists, lists_optional in rows:
        table[base] = name
        table[typing.Optional[base]] = f"{name}?"
        sequences = (lambda t: (typing.Sequence[t], typing.List[t], GenericAlias(collections.abc.Sequence, (t,)),
                                GenericAlias(list, (t,))))
        if lists:
            table.update((s, f"{name}[]") for s in sequences(base))
        if optional_lists:
            table.update((s, f"{name}?[]") for s in sequences(typing.Optional[base]))
        if lists_optional:
            table.update((typing.Optional[s], f"{name}[]?") for s in sequences(base))
    return table


def _return_types() -> dict:
    from ..tensor import Tensor
    return {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]", int: "SymInt",
            float: "float", bool: "bool", typing.Union[int, float, bool]: "Scalar"}


def infer_schema(prototype_function: Callable, /, *, mutates_args: str | Iterable[str], op_name: str | None = None,
                 tags=()) -> str:
    """The schema of ``prototype_function`` from its type hints, in PyTorch's language and exactly as
    ``torch.library.infer_schema`` writes it: ``"(Tensor x, float alpha=1.0) -> Tensor"`` (with ``op_name``
    first when given). ``mutates_args`` names the arguments the function writes into, or is ``"unknown"``.
    Annotations name Ember's classes (``ember.Tensor``, ``ember.dtype``, ``ember.device``); written as strings
    (``from __future__ import annotations``), ``Tensor``, ``dtype`` and ``device`` mean Ember's."""
    sig = inspect.signature(prototype_function)

    def error(what: str):
        raise SchemaError(f"infer_schema(func): {what} Got func with signature {sig})")

    if not isinstance(mutates_args, str):
        mutates_args = tuple(mutates_args)
    elif mutates_args != "unknown":
        raise SchemaError("mutates_args must either be a sequence of the names of the arguments that are mutated or "
                          "the string 'unknown'. ")
    supported = _supported_types()
    params, seen, kw_only = [], set(), False
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not kw_only:
            params.append("*")
            kw_only = True
        if param.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        annotation = _evaluate(param.annotation, prototype_function, error)
        schema_type = supported.get(annotation)
        if schema_type is None:
            error(f"Parameter {name} has unsupported type {param.annotation}. The valid types are: "
                  f"{', '.join(dict.fromkeys(supported.values()))}.")
        if mutates_args == "unknown" or name in mutates_args:
            if not schema_type.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can be "
                      f"mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        params.append(f"{schema_type} {name}" if param.default is inspect.Parameter.empty
                      else f"{schema_type} {name}={_default_text(param.default, name, error)}")
    if mutates_args != "unknown":
        unseen = set(mutates_args) - seen
        if unseen:
            error(f"{unseen} in mutates_args were not found in the custom op's signature. mutates_args should "
                  f"contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
                  f"don't know.")
    returns = _infer_returns(_evaluate(sig.return_annotation, prototype_function, error), error)
    prefix = op_name if op_name is not None else ""
    return f"{prefix}({', '.join(params)}) -> {returns}"


def _evaluate(annotation, function: Callable, error: Callable):
    """An annotation written as a string (postponed evaluation), evaluated where the function was defined, with
    Ember's ``Tensor``, ``dtype``, ``device`` and typing's names as fallbacks."""
    if isinstance(annotation, str):
        from ..dispatch.schema.device import device
        from ..dispatch.schema.dtypes import dtype
        from ..tensor import Tensor
        fallback = {"Tensor": Tensor, "dtype": dtype, "device": device, "Optional": typing.Optional,
                    "List": typing.List, "Sequence": typing.Sequence, "Union": typing.Union, "typing": typing}
        try:
            return eval(annotation, {**fallback, **function.__globals__})  # noqa: S307  (PyTorch does the same)
        except Exception as exc:  # noqa: BLE001
            error(f"Unsupported type annotation {annotation}. It is not a type. ({type(exc).__name__}: {exc})")
    origin = typing.get_origin(annotation)
    if origin is not None and any(isinstance(a, str) for a in typing.get_args(annotation)):
        args = tuple(_evaluate(a, function, error) for a in typing.get_args(annotation))
        return GenericAlias(origin, args) if origin is not typing.Union else typing.Union[args]
    return annotation


def _default_text(value, name: str, error: Callable) -> str:
    from ..dispatch.schema.device import device
    from ..dispatch.schema.dtypes import dtype
    if value is None or isinstance(value, (int, float, bool)):
        return str(value)
    if isinstance(value, (str, device)):
        return f'"{value}"'
    if isinstance(value, dtype):
        return value.name
    error(f"Parameter {name} has an unsupported default value type {type(value)}. Please file an issue on GitHub "
          f"so we can prioritize this.")


def _infer_returns(annotation, error: Callable) -> str:
    if annotation is None:
        return "()"
    if annotation is inspect.Parameter.empty:
        error("No return type annotation was provided. Please add one.")
    supported = _return_types()
    if typing.get_origin(annotation) is not tuple:
        if annotation not in supported:
            error(f"Return has unsupported type {annotation}. The valid types are: {supported}.")
        return supported[annotation]
    args = typing.get_args(annotation)
    for arg in args:
        if arg not in supported:
            error(f"Return has unsupported type {annotation}. The valid types are: {supported}.")
    text = ", ".join(supported[a] for a in args)
    return f"(({text}))" if len(args) == 1 else f"({text})"


__all__ = ["Arg", "Schema", "SchemaError", "parse", "infer_schema", "PARAM_TYPES", "RESERVED_NAMES"]
