"""The backend contract, checked as Thinc checks its ``Ops`` subclasses: from the code, for every backend.

- Backend code imports only ``ember.dispatch``'s top level (the names in its ``__all__``), its own
  ``ember.backends`` package and its array library; never a submodule of ``ember.dispatch`` or the rest of
  Ember, so that a bundled backend is written exactly as a third-party one must be. The few public Ember
  names backend code uses are listed in ``PUBLIC``; the files not yet moved off a submodule, in ``EXCEPTIONS``.
- Every kernel is registered under an op of the schema and takes that op's parameters, in signature order:
  the executor calls ``kernel(*values)`` with one value per parameter of the op.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import pytest

import ember.dispatch
from ember.dispatch import OPS, registry

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "examples" / "template_backend" / "ember_template_backend.py"
BACKEND_CODE = sorted([*(ROOT / "backends").rglob("*.py"), TEMPLATE])
API = frozenset(ember.dispatch.__all__)

#: Ember modules besides ``ember.dispatch`` and ``ember.backends`` that backend code may import: the
#: public API, where ``ember.backends`` is PyTorch's ``torch.backends`` rather than a plugin.
PUBLIC = {
    "ember": "python -m ember.backends checks that the cpu backend computes, through the public API",
    "ember.cuda": "ember.backends.cudnn.is_available() asks ember.cuda, as torch.backends.cudnn asks torch.cuda",
}
#: Backend files that still import a submodule of ``ember.dispatch``, each with its reason.
EXCEPTIONS: dict[str, str] = {}


def _package_of(path: Path) -> str:
    """The package a backend file's relative imports start from (a bundled one's, under ember.backends)."""
    if path == TEMPLATE:
        return ""
    parts = path.relative_to(ROOT / "backends").with_suffix("").parts
    return ".".join(("ember.backends", *parts[:-1]))


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` reads from, relative imports resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _allowed_module(name: str) -> bool:
    """Whether backend code may import module ``name``: one not of Ember, the backend API, a package of
    ``ember.backends``, or one in ``PUBLIC``."""
    if name != "ember" and not name.startswith("ember."):
        return True
    return name in ("ember.dispatch", "ember.backends", *PUBLIC) or name.startswith("ember.backends.")


def contract_violations(source: str, package: str = "") -> list[str]:
    """Each import (at any depth, in functions too) or ``ember.dispatch`` attribute that reaches past the
    backend API, as ``line: what``."""
    tree = ast.parse(source)
    found = []
    dispatch = set()  # the dotted names that stand for the ember.dispatch module here
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _allowed_module(alias.name):
                    found.append(f"{node.lineno}: import {alias.name}")
                elif alias.name == "ember.dispatch":
                    dispatch.add(alias.asname or alias.name)
                elif alias.name == "ember":
                    dispatch.add(f"{alias.asname or alias.name}.dispatch")
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if module == "ember":
                found += [f"{node.lineno}: from ember import {a.name}" for a in node.names
                          if not _allowed_module(f"ember.{a.name}")]
                dispatch.update(a.asname or a.name for a in node.names if a.name == "dispatch")
            elif module == "ember.dispatch":
                found += [f"{node.lineno}: from ember.dispatch import {a.name} (not in ember.dispatch.__all__)"
                          for a in node.names if a.name not in API]
            elif not _allowed_module(module):
                found.append(f"{node.lineno}: from {module} import {', '.join(a.name for a in node.names)}")
    found += [f"{node.lineno}: {_dotted(node.value)}.{node.attr} (not in ember.dispatch.__all__)"
              for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and _dotted(node.value) in dispatch and node.attr not in API]
    return found


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


@pytest.mark.parametrize("path", BACKEND_CODE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_backend_code_imports_only_the_backend_api(path):
    name = path.relative_to(ROOT).as_posix()
    violations = contract_violations(path.read_text(encoding="utf-8"), _package_of(path))
    if name in EXCEPTIONS:
        assert violations, f"{name} keeps to the backend API now: take it off EXCEPTIONS"
    else:
        assert violations == [], f"{name} reaches past ember.dispatch's top level:\n" + "\n".join(violations)


def test_every_exception_is_a_backend_file():
    assert [name for name in EXCEPTIONS if not (ROOT / name).is_file()] == []


def test_the_checker_sees_what_it_must():
    """The checker itself: it flags submodules, private Ember modules and names outside ``__all__``, at any
    depth and through aliases and relative imports, and passes what the contract allows."""
    bad = ("from ember.dispatch.fusion import ElementwiseProgram\n"
           "def f():\n    import ember.dispatch.contract.flags\n"
           "from ember.dispatch import dispatcher\n"
           "from ember import tensor\n"
           "import ember.dispatch as ed\nx = ed.schema\n"
           "from .... import autograd\n"
           "import ember as e\ny = e.dispatch.plan\n")
    lines = sorted(int(v.split(":")[0]) for v in contract_violations(bad, "ember.backends.cpu.sub"))
    assert lines == [1, 3, 4, 5, 7, 8, 10]
    good = ("import numpy\nimport ember.dispatch as ed\nimport ember.dispatch\n"
            "from ember.dispatch import Backend, backend_hooks\nfrom ember.backends.flags.cuda import matmul\n"
            "from . import fusion\nfrom .. import strided\nx = ed.float32 + ember.dispatch.dtypes.int8\n"
            "def f():\n    from ember import cuda\n")
    assert contract_violations(good, "ember.backends.cpu") == []


def test_the_backend_api_resolves():
    """Every name of the backend API exists, those imported on first use included."""
    missing = [name for name in sorted(API) if not hasattr(ember.dispatch, name)]
    assert missing == []


def _load_template():
    """The template plugin's source in this checkout (not an installed copy), under a name of its own."""
    spec = importlib.util.spec_from_file_location("_template_backend_under_test", TEMPLATE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels(name: str) -> dict:
    """The kernel table of backend ``name``; the template's from its source in this checkout."""
    if name == "template":
        return _load_template().TemplateBackend.kernels
    backend = registry.backends()[name]
    reason = backend.unavailable_reason()  # cuda makes its table only where CuPy runs
    if not backend.kernels:
        pytest.skip(f"{name}: {reason}")
    return backend.kernels


def takes(kernel, count: int) -> bool:
    """Whether ``kernel(*values)`` binds for ``count`` positional values (``*args`` takes any number)."""
    try:
        inspect.signature(kernel).bind(*range(count))
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("backend", ["cpu", "opencl", "cuda", "template"])
def test_every_kernel_takes_its_ops_parameters(backend):
    kernels = _kernels(backend)
    assert kernels.keys() <= OPS.keys(), f"kernels for ops the schema lacks: {sorted(kernels.keys() - OPS.keys())}"
    wrong = {name: f"{inspect.signature(kernel)} for {len(OPS[name].params)} parameters "
                   f"({', '.join(p.name for p in OPS[name].params)})"
             for name, kernel in kernels.items() if not takes(kernel, len(OPS[name].params))}
    assert wrong == {}, f"{backend}: kernels whose arity differs from their op's signature"


def test_the_arity_check_sees_a_mismatch():
    assert takes(lambda a, b, alpha: a, 3) and takes(lambda *arrays: 0, 3) and takes(lambda a, b=1: a, 1)
    assert not takes(lambda a, b: a, 3) and not takes(lambda a, b, alpha: a, 2)
    assert not takes(lambda a, *, alpha: a, 1)
