"""Read a callable's parameters, from PyTorch or from Ember, and compare two of them.

Where the parameters come from, in order:
- an Ember function generated from the op schema carries its ``OpDef`` as ``.op``: its
  ``params`` are the signature;
- ``inspect.signature``, unless it only forwards ``*args, **kwargs`` (PyTorch's
  ``boolean_dispatch`` wrappers, Ember's generated methods);
- else the first line of ``__doc__`` when it reads ``name(params)``, as PyTorch's C
  functions and Ember's generated functions write it (``add(input, other, *, alpha=1)``,
  ``add(Tensor input, Tensor other, *, Scalar alpha=1)``);
- else the signature is unknown, and the name is counted as such rather than compared.
"""
from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any

from ..dispatch.schema import REQUIRED as SCHEMA_REQUIRED
from ..dispatch.schema.opdef import split_top_level

POSITIONAL, KEYWORD, VAR_POSITIONAL, VAR_KEYWORD = "positional", "keyword", "*args", "**kwargs"
_KINDS = {inspect.Parameter.POSITIONAL_ONLY: POSITIONAL, inspect.Parameter.POSITIONAL_OR_KEYWORD: POSITIONAL,
          inspect.Parameter.KEYWORD_ONLY: KEYWORD, inspect.Parameter.VAR_POSITIONAL: VAR_POSITIONAL,
          inspect.Parameter.VAR_KEYWORD: VAR_KEYWORD}


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED = _Required()


@dataclass(frozen=True)
class Text:
    """A default known only as source text (``layout=torch.strided`` in a docstring)."""
    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Param:
    name: str
    kind: str = POSITIONAL
    default: Any = REQUIRED


Signature = tuple  # tuple[Param, ...]


def _default(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return Text(text)


def parse_params(text: str) -> Signature:
    """Parameters from ``a, b=1, *, c=None`` (types before or after a name are dropped)."""
    params, keyword_only = [], False
    for part in split_top_level(text):
        if part in ("*", "/"):
            keyword_only = keyword_only or part == "*"
            continue
        head, eq, default = part.partition("=")
        head = head.split(":")[0].strip()
        name = head.split()[-1] if head.split() else ""
        if name.startswith("**"):
            params.append(Param(name[2:], VAR_KEYWORD))
        elif name.startswith("*"):
            params.append(Param(name[1:], VAR_POSITIONAL))
            keyword_only = True
        elif name.isidentifier():
            params.append(Param(name, KEYWORD if keyword_only else POSITIONAL,
                                _default(default.strip()) if eq else REQUIRED))
    return tuple(params)


_DOC_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+)\((.*?)\)\s*(?:->.*)?$")


def from_doc(obj: Any, name: str) -> Signature | None:
    lines = [line.strip() for line in (getattr(obj, "__doc__", None) or "").splitlines() if line.strip()]
    match = _DOC_LINE.match(lines[0]) if lines else None
    if match is None or match.group(1) not in (name, getattr(obj, "__name__", name)):
        return None
    return parse_params(match.group(2))


def _forwards_everything(params: Signature) -> bool:
    kinds = {p.kind for p in params}
    return VAR_POSITIONAL in kinds or VAR_KEYWORD in kinds


def from_inspect(obj: Any) -> Signature | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return tuple(Param(p.name, _KINDS[p.kind], REQUIRED if p.default is p.empty else p.default)
                 for p in signature.parameters.values())


def from_op(op: Any, function: bool = True) -> Signature:
    """An op's parameters; as a function (not a Tensor method), with the ``out=`` the dispatcher accepts."""
    params = tuple(Param(p.name, KEYWORD if p.kw_only else POSITIONAL,
                         REQUIRED if p.default is SCHEMA_REQUIRED else p.default) for p in op.params)
    return params + ((Param("out", KEYWORD, None),) if function and getattr(op, "accepts_out", False) else ())


def signature_of(obj: Any, name: str, *, method: bool = False) -> Signature | None:
    """The parameters of ``obj`` (``None``: unknown), from the sources in this module's docstring."""
    op = getattr(obj, "op", None)
    if op is not None and hasattr(op, "params"):
        return from_op(op, function=not method)
    inspected = from_inspect(obj)
    if inspected is not None and not _forwards_everything(inspected):
        return inspected
    documented = from_doc(obj, name)
    if documented is None:
        return inspected
    named = {p.name for p in documented}
    extra = tuple(p for p in inspected or () if p.kind == KEYWORD and p.name not in named)
    return documented + extra


def method_signature(obj: Any, name: str, *, has_self: bool) -> Signature | None:
    """A Tensor method's parameters without the tensor itself.

    PyTorch's C methods document themselves without ``self``; its Python methods, and every
    Ember method (schema ops list the tensor as their first input), take it first.
    """
    params = signature_of(obj, name, method=True)
    if params is None:
        return None
    if has_self or (params and params[0].name == "self"):
        return params[1:] if params and params[0].kind == POSITIONAL else params
    return params


def show(value: Any) -> str:
    """A default as a reader wants it: ``torch.nn.functional.relu``, not ``<function relu at 0x...>``."""
    if isinstance(value, Text):
        return value.text
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', None) or ''}.{value.__qualname__}".lstrip(".")
    text = repr(value)
    return f"<{type(value).__name__} object>" if " at 0x" in text else text


def _normal(value: Any) -> Any:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    if value is None or isinstance(value, (int, float, str)):
        return value
    return _unqualified(show(value))


def _unqualified(text: str) -> str:
    return re.sub(r"^<?(torch|ember)\.", "", text.replace("torch._C.", "torch."))


def same_default(theirs: Any, ours: Any) -> bool:
    """Equal defaults; one known only as text is compared by its text, ``torch.``/``ember.`` dropped."""
    if isinstance(theirs, Text) or isinstance(ours, Text):
        return _unqualified(show(theirs)) == _unqualified(show(ours))
    return _normal(theirs) == _normal(ours)


def compare(theirs: Signature, ours: Signature) -> list[str]:
    """How ``ours`` (Ember) differs from ``theirs`` (PyTorch), one phrase per difference.

    PyTorch's parameters named with a leading underscore (``_stacklevel``) are private and
    not compared. A required Ember parameter that PyTorch lacks is no difference when
    PyTorch takes ``*args`` (``Tensor.view(*shape)`` against ``view(size)``).
    """
    problems = []
    our_params = {p.name: p for p in ours if p.kind in (POSITIONAL, KEYWORD)}
    their_params = {p.name: p for p in theirs if p.kind in (POSITIONAL, KEYWORD) and not p.name.startswith("_")}
    takes_any_keyword = any(p.kind == VAR_KEYWORD for p in ours)
    for name, param in their_params.items():
        mine = our_params.get(name)
        if mine is None:
            if not takes_any_keyword:
                problems.append(f"missing `{name}`")
        elif mine.default is REQUIRED and param.default is not REQUIRED:
            problems.append(f"`{name}` required (PyTorch: `{name}={show(param.default)}`)")
        elif REQUIRED not in (mine.default, param.default) and not same_default(param.default, mine.default):
            problems.append(f"`{name}={show(mine.default)}` (PyTorch: `{name}={show(param.default)}`)")
    takes_any_theirs = any(p.kind in (VAR_KEYWORD, VAR_POSITIONAL) for p in theirs)
    for name, mine in our_params.items():
        if name not in their_params and mine.default is REQUIRED and not takes_any_theirs:
            problems.append(f"extra required `{name}`")
    their_order = [p.name for p in theirs if p.kind == POSITIONAL and p.name in our_params]
    problems += [f"`{name}` keyword-only" for name in their_order if our_params[name].kind == KEYWORD]
    their_order = [name for name in their_order if our_params[name].kind == POSITIONAL]
    our_order = [p.name for p in ours if p.kind == POSITIONAL and p.name in their_order]
    if our_order != their_order:
        problems.append(f"positional order ({', '.join(our_order)}), PyTorch ({', '.join(their_order)})")
    return problems
