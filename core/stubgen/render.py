"""Render every stub from a freshly imported ember.

``python -m ember.stubgen.render FILE`` writes ``{path: text}`` as JSON to FILE. The stubs are rendered in
a process of their own because what a module holds depends on what else the process imported (pytest's
plugins, a test that imported ``ember.profiler``): a fresh ``import ember`` is what users get.
"""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import ember

from .modules import module_stub, result_classes
from .names import Namespace
from .signatures import Types

#: The modules that get a stub, in the order they are written.
MODULES = ("ember", "ember.tensor", "ember.nn.functional")
_EXCLUDED = {"ember.stubgen"}  # the generator itself, bound on ember once it runs


def _tensor_extras(stub) -> None:
    names = stub.names
    number = " | ".join(names.imported("builtins", t) for t in ("int", "float", "bool"))
    stub.add([f"_Number: {names.imported('typing', 'TypeAlias')} = {number}"])
    for lines in result_classes(stub.types):
        stub.add(lines)


def _own_names_only(module: types.ModuleType) -> types.ModuleType:
    """A package's stub lists everything it exports; ``ember.tensor``'s, like a plain module's, what it defines
    (its submodules are the surface's topic files, no public API of their own)."""
    if hasattr(module, "__path__") and module.__name__ != "ember.tensor":
        return module
    view = types.ModuleType(module.__name__)
    view.__file__ = module.__file__
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) == module.__name__ and (isinstance(value, type) or callable(value)):
            setattr(view, name, value)
    return view


def stub_path(module: types.ModuleType) -> str:
    """Where a module's stub goes, relative to the ``ember`` package directory."""
    root = Path(ember.__file__).resolve().parent
    return Path(module.__file__).resolve().relative_to(root).with_suffix(".pyi").as_posix()


def render_all() -> dict[str, str]:
    """Every stub's path (relative to the ember package) and text."""
    classes = {"dtype": ember.dtype, "device": ember.device, "Generator": ember.Generator}
    stubs = {}
    for name in MODULES:
        module = sys.modules[name]
        types_ = Types(Namespace(name), ember.Tensor, classes)
        extra = _tensor_extras if name == "ember.tensor" else None
        stubs[stub_path(module)] = module_stub(_own_names_only(module), types_, _EXCLUDED, extra)
    return stubs


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(render_all(), indent=1, sort_keys=True), encoding="utf-8")
