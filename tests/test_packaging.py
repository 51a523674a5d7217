"""The wheel holds every package the checkout has: pyproject's package list is checked against the folders.

A folder with an ``__init__.py`` that is missing from ``[tool.setuptools] packages`` works in the editable
checkout and silently vanishes from a wheel (as ``ember.backends.opencl.kernels`` once did).
"""
from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> tuple[set[str], dict[str, str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(config["packages"]), config["package-dir"]


def _on_disk(package_dir: dict[str, str]) -> set[str]:
    found = set()
    for package, folder in package_dir.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            found.add(".".join((package, *init.parent.relative_to(base).parts)))
    return found


def test_every_package_folder_is_listed_for_the_wheel():
    declared, package_dir = _declared()
    on_disk = _on_disk(package_dir)
    assert on_disk - declared == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert declared - on_disk == set(), "these listed packages have no folder with an __init__.py"
