"""How one stub file refers to a type: by the name it binds publicly, or through a private import.

Every name a stub imports only for its annotations is bound with a leading underscore
(``from builtins import int as _int``, ``from ember.dispatch.schema.dtypes import dtype as _dtype``), so it can
clash neither with a public name of the module (``ember.float`` is a dtype, ``Tensor.int`` a method)
nor with a method name inside a class body.
"""
from __future__ import annotations

import ast
import builtins
import collections.abc
import sys
import types
import typing
from collections import ChainMap
from typing import Any

#: typing's special forms, written under their own names (imported from ``typing``).
_TYPING_FORMS = {"Any", "Callable", "ClassVar", "Literal", "NamedTuple", "Optional", "Union", "TypeAlias"}


class Namespace:
    """The names one stub binds, and the imports its annotations need."""

    def __init__(self, module: str, public: dict[int, str] | None = None) -> None:
        self.module = module
        self.public = dict(public or {})  # id(object) -> the public name this stub binds it to
        self._imports: dict[tuple[str, str], str] = {}  # (module, name) -> local name

    def bind(self, obj: Any, name: str) -> None:
        """``obj`` is (re)exported by this stub as ``name``: annotations refer to it by that name."""
        self.public.setdefault(id(obj), name)

    def imported(self, module: str, name: str) -> str:
        """The local name of ``module.name``, imported privately."""
        if module == self.module:
            return name
        if module == "typing" and name in _TYPING_FORMS:
            local = name
        elif module == "collections.abc":
            local = name
        else:
            local = name if name.startswith("_") else f"_{name}"
        self._imports[(module, name)] = local
        return local

    def of(self, obj: Any) -> str:
        """A type expression for a class (or typing form) ``obj``; ``Any`` for what has no importable name."""
        if obj is None or obj is type(None):
            return "None"
        if isinstance(obj, str):
            return self.imported("typing", "Any")
        if id(obj) in self.public:
            return self.public[id(obj)]
        if obj is typing.Any:
            return self.imported("typing", "Any")
        if obj is Ellipsis:
            return "..."
        if isinstance(obj, types.GenericAlias):  # tuple[int, ...]
            return f"{self.of(obj.__origin__)}[{', '.join(self.of(a) for a in obj.__args__)}]"
        if isinstance(obj, type):
            module, qualname = defining_module(obj), obj.__qualname__
            if module == "builtins" and getattr(builtins, qualname, None) is obj:
                return self.imported("builtins", qualname)
            if module.startswith("collections.abc") or module == "_collections_abc":
                return self.imported("collections.abc", qualname)
            if "." not in qualname and "<" not in qualname and _importable(module, qualname, obj):
                return self.imported(module, qualname)
        return self.imported("typing", "Any")

    def import_lines(self) -> list[str]:
        """``from module import a as _a, b as _b`` lines, sorted, one per module."""
        by_module: dict[str, list[str]] = {}
        for (module, name), local in self._imports.items():
            by_module.setdefault(module, []).append(name if name == local else f"{name} as {local}")
        return [f"from {module} import {', '.join(sorted(names))}" for module, names in sorted(by_module.items())]


def scope_of(module_globals: dict) -> ChainMap:
    """Where an annotation's names are looked up: the defining module, then ember's public classes (for
    names a module imports only under ``TYPE_CHECKING``)."""
    ember = sys.modules.get("ember")
    classes = {k: v for k, v in vars(ember).items() if isinstance(v, type)} if ember is not None else {}
    return ChainMap(module_globals, classes)


def defining_module(obj: Any) -> str:
    """The name of the module that defines ``obj``: its ``__module__`` may be an alias that ``sys.modules``
    keeps for old pickles (``ember.dispatch.device``), which has no file a type checker could read."""
    module = sys.modules.get(obj.__module__)
    return module.__name__ if module is not None else obj.__module__


def _importable(module: str, name: str, obj: Any) -> bool:
    return getattr(sys.modules.get(module), name, None) is obj


_MISSING = object()


class _Resolver(ast.NodeTransformer):
    """Rewrites the names in one annotation into the names of a stub."""

    def __init__(self, names: Namespace, scope: dict) -> None:
        self.names, self.scope = names, scope

    def _resolve(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            found = self.scope.get(node.id, _MISSING)
            if found is not _MISSING and (isinstance(found, type) or not hasattr(builtins, node.id)):
                return found  # a module binding ``int`` to a dtype still means the builtin in annotations
            if hasattr(builtins, node.id):
                return getattr(builtins, node.id)
            raise LookupError(node.id)
        if isinstance(node, ast.Attribute):
            return getattr(self._resolve(node.value), node.attr)
        raise LookupError(ast.dump(node))

    def _named(self, node: ast.expr) -> ast.expr:
        try:
            obj = self._resolve(node)
        except (LookupError, AttributeError):
            return ast.Name(self.names.imported("typing", "Any"))
        if obj is None:
            return ast.Constant(None)
        if obj in (typing.Optional, typing.Union, typing.Callable, typing.Literal, typing.ClassVar):
            return ast.Name(self.names.imported("typing", obj._name))
        origin = typing.get_origin(obj)  # typing.Sequence and friends: their collections.abc class
        if origin is not None and not typing.get_args(obj) and isinstance(origin, type):
            obj = origin
        return ast.Name(self.names.of(obj))

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self._named(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        return self._named(node)

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if isinstance(node.value, str):  # a quoted forward reference
            return self.rewrite(node.value)
        return node

    def rewrite(self, source: str) -> ast.expr:
        try:
            tree = ast.parse(source, mode="eval").body
        except SyntaxError:
            return ast.Name(self.names.imported("typing", "Any"))
        return self.visit(tree)


def render_annotation(annotation: Any, names: Namespace, scope: dict) -> str:
    """An annotation (a source string, as ``from __future__ import annotations`` keeps it, or an object)
    written for the stub; its names are looked up in ``scope`` (the defining module's globals)."""
    if not isinstance(annotation, str):
        return names.of(annotation)
    return ast.unparse(_Resolver(names, scope).rewrite(annotation))
