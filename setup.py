"""Package discovery for the wheel; everything else about the project is in pyproject.toml.

The import package ``ember`` is assembled from three folders (``core/``, ``backends/``, ``conformance/``).
``[tool.setuptools.packages.find]`` can only name what it finds after the folder it searched, and
pyproject allows one such section, so the folders are searched here and their packages renamed.
Every folder with an ``__init__.py`` under a root ships, so a new subpackage cannot be left out.
"""
from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent
PACKAGE_ROOTS = {"ember": "core", "ember.backends": "backends", "ember.conformance": "conformance"}


def discover_packages(roots: dict[str, str] = PACKAGE_ROOTS, base: Path = HERE) -> list[str]:
    """Every package under each root folder, named under the package that folder is installed as."""
    packages = []
    for package, folder in roots.items():
        packages.append(package)
        packages += [f"{package}.{sub}" for sub in find_packages(str(base / folder))]
    return sorted(packages)


if __name__ == "__main__":
    setup(package_dir=PACKAGE_ROOTS, packages=discover_packages())
