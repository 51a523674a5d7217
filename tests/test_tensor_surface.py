"""Every Tensor attribute is defined once, in the class or in one table (``ember.tensor.surface``), and only
that table's ``install()`` writes attributes onto the class. (Import rules: ``test_import_cycles``.)"""
from __future__ import annotations

import inspect

import ast
from pathlib import Path

import pytest

import ember
from ember.tensor import Tensor, surface

CORE = Path(ember.__file__).resolve().parent


MODULES = {path: ".".join(["ember", *path.relative_to(CORE).with_suffix("").parts]) for path in CORE.rglob("*.py")}


def _names_of_tensor(tree: ast.Module) -> set[str]:
    """The names a module binds the Tensor class to (``Tensor``, ``from ..tensor import Tensor as _Tensor``)."""
    return {"Tensor"} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                         for alias in node.names if alias.name == "Tensor" and alias.asname}


def _writes_to_tensor(tree: ast.Module) -> list[int]:
    """Lines that assign an attribute of ``Tensor`` (``Tensor.x = ...``, ``setattr(Tensor, ...)``)."""
    names = _names_of_tensor(tree)
    lines = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        lines += [node.lineno for target in targets
                  if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id in names]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in names:
            lines.append(node.lineno)
    return lines


def test_only_the_surface_writes_tensor_attributes():
    writers = {module: lines for path, module in MODULES.items()
               if (lines := _writes_to_tensor(ast.parse(path.read_text())))}
    assert set(writers) == {"ember.tensor.surface"}, writers


def _class_body_names() -> set[str]:
    tree = ast.parse((CORE / "tensor" / "__init__.py").read_text())
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Tensor").body
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_each_tensor_attribute_is_defined_once_in_the_class_or_the_surface():
    own = _class_body_names()
    installed = {name for name, entry in surface.table().items() if entry.kind != "function"}
    assert own & installed == set()
    python_made = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
                   "__firstlineno__", "__static_attributes__", "__annotate__", "__annotate_func__",
                   "__annotations_cache__"} | set(Tensor.__slots__)
    assert set(vars(Tensor)) - python_made == own | installed


def test_the_surface_installs_once():
    with pytest.raises(RuntimeError, match="already defined"):
        surface.install({})


def test_every_function_of_the_surface_is_public():
    for name, entry in surface.table().items():
        if entry.kind in ("function", "both"):
            # the function itself, or it under the wrapper that takes NumPy's keyword names (numpy_names)
            assert inspect.unwrap(getattr(ember, name)) is entry.implementation, name
