"""Modules that must not import each other in a cycle.

A cycle between two modules works only while one side defers its import into a function, so that the
import order decides whether a name exists yet. The graph is read from the source: every import that
runs when a module is imported (top level, class bodies, ``try``/``if`` blocks; not functions, not
``if TYPE_CHECKING:``), with relative imports resolved, over all of Ember's modules. Importing
``pkg.sub`` leans on ``pkg`` having started, which Python allows mid-cycle, so it adds no edge to
``pkg``; ``from pkg import name`` adds one to ``pkg`` only when ``name`` is not a submodule. A
module's own packages (``import ember`` inside ``ember.nn``) have always started before it runs, so
importing them adds no edge either. A second graph also counts the imports inside functions, so that a
cycle cannot hide there.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

# The packages whose folders hold Ember's modules (core/, backends/ and conformance/ in a checkout).
ROOTS = ("ember", "ember.backends", "ember.conformance")


def _modules() -> dict[str, Path]:
    """Every module of the ember package by dotted name (a package by its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for root in ROOTS:
        folder = Path(importlib.util.find_spec(root).submodule_search_locations[0])
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.setdefault(".".join((root, *parts)), path)
    return found


def _imports(nodes, deferred: bool):
    """The import statements among ``nodes``: those that run at import, and with ``deferred`` also those
    inside functions. ``if TYPE_CHECKING:`` bodies never run."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.orelse, deferred)
        elif deferred or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _imports(ast.iter_child_nodes(node), deferred)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The ember modules one import statement makes Python import."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{node.module}" if node.module else package
    else:
        base = node.module
    submodules = {f"{base}.{alias.name}" for alias in node.names} & known
    attributes_of_base = len(submodules) < len(node.names)
    return submodules | ({base} & known if attributes_of_base else set())


def _ancestors(module: str) -> set[str]:
    """The packages that contain ``module``: Python has started each before ``module`` runs, so importing
    one (``import ember`` inside ``ember.nn``) finds it in ``sys.modules`` and runs nothing."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph(deferred: bool = False, packages_count: bool = False) -> dict[str, set[str]]:
    """Which ember modules each ember module imports: at import time, or with ``deferred`` at any time.
    With ``packages_count``, importing one's own package counts too: it works mid-cycle, but it is a
    circle in the design all the same (``import ember`` in a module ``ember`` itself imports)."""
    modules = _modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        imported = (_imported(node, name, is_package, known) for node in _imports(tree.body, deferred))
        graph[name] = set().union(*imported) - {name} - (set() if packages_count else _ancestors(name))
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules that importing ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for imported in graph[todo.pop()] - seen:
            seen.add(imported)
            todo.append(imported)
    return seen


GRAPH = import_graph()
GRAPH_WITH_DEFERRED = import_graph(deferred=True)
STRICT_GRAPH = import_graph(packages_count=True)


def _members(prefix: str) -> set[str]:
    """The module ``prefix`` and, when it is a package, every module inside it."""
    members = {m for m in GRAPH if m == prefix or m.startswith(prefix + ".")}
    assert members, f"no module named {prefix}"
    return members


def cycles_between(first: str, second: str, graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The pairs of modules, one under ``first`` and one under ``second``, that each import the other."""
    reach = {m: reachable(graph, m) for m in _members(first) | _members(second)}
    return sorted((a, b) for a in _members(first) for b in _members(second) if b in reach[a] and a in reach[b])


PAIRS = [
    ("ember.backends.opencl.backend", "ember.backends.opencl.kernels"),
    ("ember.dispatch.schema.device", "ember.dispatch.contract.registry"),
    ("ember.tensor", "ember.serialization"),
    ("ember.utils.data.dataloader", "ember.utils.data.multiprocess"),
    ("ember.dispatch.execution.dispatcher", "ember.dispatch.execution.fallback"),
    ("ember.dispatch.execution.dispatcher", "ember.dispatch.execution.executor"),
    ("ember.dispatch.execution.modes", "ember.dispatch.execution.dispatcher"),
]


@pytest.mark.parametrize("first, second", PAIRS)
def test_no_import_cycle(first, second):
    assert cycles_between(first, second, GRAPH) == [], f"{first} and {second} import each other"


@pytest.mark.parametrize("first, second", PAIRS)
def test_no_cycle_hidden_in_a_function(first, second):
    """Moving one side's import into a function hides the cycle from the test above, not from readers."""
    assert cycles_between(first, second, GRAPH_WITH_DEFERRED) == [], \
        f"{first} and {second} import each other once imports inside functions count"


def test_the_graph_sees_a_cycle():
    """The detector itself: modules on a cycle of three import each other; one that only enters it does not."""
    graph = {"ember.a": {"ember.b"}, "ember.b": {"ember.c"}, "ember.c": {"ember.a"}, "ember.d": {"ember.a"}}
    assert reachable(graph, "ember.a") == {"ember.a", "ember.b", "ember.c"}
    assert "ember.d" not in reachable(graph, "ember.a")


def test_imports_inside_functions_are_deferred():
    """Imports in functions run later, and those under ``if TYPE_CHECKING:`` never do."""
    source = "import a\nif TYPE_CHECKING:\n    import b\ndef f():\n    import c\nclass K:\n    import d\n"
    at_import = {n.names[0].name for n in _imports(ast.parse(source).body, deferred=False)}
    anytime = {n.names[0].name for n in _imports(ast.parse(source).body, deferred=True)}
    assert at_import == {"a", "d"} and anytime == {"a", "c", "d"}


def test_relative_imports_resolve():
    assert "ember.dispatch.contract.plugins" in GRAPH["ember.dispatch.schema.device"]
    assert "ember.tensor" in GRAPH["ember.serialization"]
    assert "ember.backends.opencl.kernels" in GRAPH["ember.backends.opencl.backend"]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of more than one module that all reach each other (strongly connected components)."""
    reach = {module: reachable(graph, module) for module in graph}
    found, placed = [], set()
    for module in sorted(graph):
        if module in placed or module not in reach[module]:
            continue
        group = sorted(m for m in reach[module] if module in reach[m])
        placed.update(group)
        if len(group) > 1:
            found.append(group)
    return found


def test_circles_finds_a_circle():
    graph = {"ember.a": {"ember.b"}, "ember.b": {"ember.c"}, "ember.c": {"ember.a"}, "ember.d": {"ember.a"}}
    assert circles(graph) == [["ember.a", "ember.b", "ember.c"]]


def test_ember_has_no_import_circles():
    """No group of modules imports each other at import time, a module's own packages included."""
    assert circles(STRICT_GRAPH) == []


def test_dispatch_imports_nothing_above_it():
    """``ember.dispatch`` is the bottom layer: not even an import inside a function reaches above it."""
    upward = [f"{module} imports {imported}" for module in sorted(_members("ember.dispatch"))
              for imported in sorted(GRAPH_WITH_DEFERRED[module])
              if not imported.startswith("ember.dispatch")]
    assert upward == []


# -- ember.dispatch's rooms ----------------------------------------------------------------------------

#: The modules that stay directly in ember.dispatch: the backend API, the inspector and its report, and the
#: elementwise formulas (the fusion IR, formula composites and the float32 erf/exp), which belong to no room.
DISPATCH_FLAT = {"ember.dispatch", "ember.dispatch.__main__", "ember.dispatch.op_report", "ember.dispatch.fusion",
                 "ember.dispatch.formula_composite", "ember.dispatch.fast_erf", "ember.dispatch.fast_exp"}
ROOMS = ("schema", "contract", "execution", "ops")
#: The modules directly in ember.dispatch.ops beside the op families: F, the ordered import of every op
#: module, the private helpers of more than one family, and the ONNX pieces every family's lowerings use.
OPS_FLAT = {"ember.dispatch.ops", "ember.dispatch.ops.namespace", "ember.dispatch.ops._declare",
            "ember.dispatch.ops._shared", "ember.dispatch.ops.onnx_support"}
#: Which rooms each room may import (None: the flat modules): the schema is the bottom room, the backend
#: contract stands on it, and the call path on both; the op declarations may use all three, and the formulas.
ROOM_MAY_IMPORT = {"schema": set(), "contract": {"schema"}, "execution": {"schema", "contract"},
                   "ops": {"schema", "contract", "execution", None}}
#: Imports from the schema up into another room that the code still needs, each with its reason. Fix one by
#: moving what it needs down, then take it off this list.
SCHEMA_REACHES_UP = {
    ("ember.dispatch.schema.device", "ember.dispatch.contract.plugins"):
        "device('cuda') refuses a device type no installed backend provides, as PyTorch does",
    ("ember.dispatch.schema.defaults", "ember.dispatch.contract.registry"):
        "the default device is resolved (its index filled in) by the device's backend",
    ("ember.dispatch.schema.binding", "ember.dispatch.contract.registry"):
        "a device? argument is bound to the device its backend resolves",
    ("ember.dispatch.schema.binding", "ember.dispatch.execution.links"):
        "a Tensor or Scalar argument is recognized by the tensor type ember.tensor registers there",
}


def _room(module: str) -> str | None:
    """The room of a module of ember.dispatch (None for the flat modules)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in ROOMS else None


def test_dispatch_modules_are_in_rooms():
    """Nothing lands flat in ember.dispatch again: each module is in schema/, contract/, execution/ or ops/."""
    flat = {m for m in _members("ember.dispatch") if _room(m) is None}
    assert flat == DISPATCH_FLAT


def test_op_modules_are_in_families():
    """Each op module is in a family folder of ops/ (``ops/<family>/<topic>.py``); next to the families sit
    only the modules of OPS_FLAT."""
    paths = _modules()
    direct = {m for m in _members("ember.dispatch.ops") if m.count(".") == 3}
    families = {m for m in direct if paths[m].name == "__init__.py"}
    assert len(families) >= 6 and direct - families == OPS_FLAT - {"ember.dispatch.ops"}
    assert all(m.rpartition(".")[0] in families for m in _members("ember.dispatch.ops") if m.count(".") > 3)
    assert all(paths[m].name != "__init__.py" for m in _members("ember.dispatch.ops") if m.count(".") > 3), \
        "families hold modules, not folders"


def test_rooms_import_only_the_rooms_below():
    """schema/ imports no other room (but the reasons in SCHEMA_REACHES_UP); contract/ only the schema;
    execution/ no op declaration. Imports inside functions count."""
    wrong = [f"{module} imports {imported}" for module in sorted(_members("ember.dispatch"))
             if (room := _room(module)) is not None
             for imported in sorted(GRAPH_WITH_DEFERRED[module])
             if imported.startswith("ember.dispatch.") and _room(imported) not in (room, *ROOM_MAY_IMPORT[room])
             and (module, imported) not in SCHEMA_REACHES_UP]
    assert wrong == []


def test_the_schemas_exceptions_are_current():
    stale = [pair for pair in SCHEMA_REACHES_UP if pair[1] not in GRAPH_WITH_DEFERRED.get(pair[0], set())]
    assert stale == [], "these imports are gone: take them off SCHEMA_REACHES_UP"
