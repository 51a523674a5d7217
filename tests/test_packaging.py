"""The wheel holds every package and package file the checkout has.

``setup.py`` discovers the packages under ``core/``, ``backends/`` and ``conformance/``. A folder that
is missing from the wheel still works in the editable checkout, so nothing else notices (as
``ember.backends.opencl.kernels`` once went missing). scripts/check_wheel.sh installs the real wheel;
these tests catch the same mistakes without building it.
"""
from __future__ import annotations

import importlib.util
from fnmatch import fnmatch
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]


def _setup_module():
    """setup.py as a module: importing it only defines things (``setup()`` runs under ``__main__``)."""
    spec = importlib.util.spec_from_file_location("ember_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SETUP = _setup_module()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _files(suffix_test) -> dict[str, list[Path]]:
    """Files under each root folder (no caches), by the package name the folder is installed as."""
    found: dict[str, list[Path]] = {}
    for package, folder in SETUP.PACKAGE_ROOTS.items():
        base = ROOT / folder
        for path in base.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and suffix_test(path):
                found.setdefault(".".join((package, *path.parent.relative_to(base).parts)), []).append(path)
    return found


def test_discovery_finds_every_folder_with_an_init():
    folders = set(_files(lambda p: p.name == "__init__.py"))
    discovered = set(SETUP.discover_packages())
    assert folders - discovered == set(), "setup.py's discovery misses these packages"
    assert discovered - folders == set(), "setup.py's discovery names packages that have no __init__.py"


def test_every_folder_of_modules_is_a_package():
    """A folder of modules without ``__init__.py`` imports in the checkout (as a namespace package)
    but is not discovered, so the wheel would lack it."""
    with_modules = set(_files(lambda p: p.suffix == ".py"))
    packages = set(SETUP.discover_packages())
    assert with_modules - packages == set(), "add an __init__.py to these folders"


def test_packages_are_declared_in_one_place():
    setuptools_config = PYPROJECT["tool"].get("setuptools", {})
    assert "packages" not in setuptools_config and "package-dir" not in setuptools_config, \
        "setup.py discovers the packages; a list in pyproject.toml would override it"


def test_type_information_is_package_data():
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["*"]
    assert "py.typed" in patterns and "*.pyi" in patterns


def test_every_data_file_is_declared():
    """Non-Python files beside the modules (stubs, py.typed, kernel sources) ship only when declared."""
    declared = PYPROJECT["tool"]["setuptools"]["package-data"]
    undeclared = [str(path.relative_to(ROOT))
                  for package, paths in _files(lambda p: p.suffix not in (".py", ".pyc")).items()
                  for path in paths
                  if not any(fnmatch(path.name, pattern)
                             for key in ("*", package) for pattern in declared.get(key, ()))]
    assert undeclared == [], "declare these in [tool.setuptools.package-data]"


def _source_of(module: str) -> Path:
    """The file a dotted ``ember...`` module name is built from, through the longest matching root."""
    package = max((name for name in SETUP.PACKAGE_ROOTS if module == name or module.startswith(name + ".")), key=len)
    path = ROOT / SETUP.PACKAGE_ROOTS[package] / Path(*module[len(package):].split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_entry_points_name_shipped_modules():
    """Backends and the pytest plugin are found through entry points: each must name a shipped module."""
    discovered = set(SETUP.discover_packages())
    targets = [value.split(":")[0] for group in PYPROJECT["project"]["entry-points"].values()
               for value in group.values()]
    unshipped = [t for t in targets
                 if not _source_of(t).is_file() or (t if t in discovered else t.rpartition(".")[0]) not in discovered]
    assert unshipped == []
