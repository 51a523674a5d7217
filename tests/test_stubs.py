"""The shipped ``.pyi`` stubs: current with the schema and the runtime, valid Python, and telling type
checkers what the runtime does (``python -m ember.stubgen`` regenerates them)."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember import stubgen
from ember.stubgen.__main__ import main as stubgen_main
from ember.stubgen.modules import DECLARED_RESULTS

ROOT = stubgen.PACKAGE_DIR
STUBS = ("__init__.pyi", "tensor/__init__.pyi", "nn/functional/__init__.pyi")


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return stubgen.generate()


def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)


def _functions(body: list) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in body if isinstance(node, ast.FunctionDef)}


def _tensor_class() -> ast.ClassDef:
    return next(n for n in _tree("tensor/__init__.pyi").body if isinstance(n, ast.ClassDef) and n.name == "Tensor")


def _params(function: ast.FunctionDef) -> tuple[list[str], list[str], str | None]:
    """Positional names, keyword-only names, and the ``*name`` of a stub function."""
    args = function.args
    vararg = args.vararg.arg if args.vararg else None
    return [a.arg for a in args.args], [a.arg for a in args.kwonlyargs], vararg


def test_the_checked_in_stubs_are_current(generated):
    assert sorted(generated) == sorted(STUBS)
    stale = stubgen.stale(generated)
    assert not stale, f"stale stubs {stale}: regenerate with `python -m ember.stubgen`"
    assert stubgen_main(["--check"]) == 0


def test_a_changed_stub_is_reported_stale(generated, tmp_path):
    for path, text in generated.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    assert stubgen.stale(generated, tmp_path) == []
    tensor_stub = "tensor/__init__.pyi"
    (tmp_path / tensor_stub).write_text(generated[tensor_stub].replace("def backward(", "def backwards("))
    (tmp_path / "nn/functional/__init__.pyi").unlink()
    assert stubgen.stale(generated, tmp_path) == ["nn/functional/__init__.pyi", "tensor/__init__.pyi"]
    assert stubgen.write(generated, tmp_path) == ["nn/functional/__init__.pyi", "tensor/__init__.pyi"]
    assert stubgen.stale(generated, tmp_path) == []


def test_generation_is_deterministic(generated):
    assert stubgen.generate() == generated


def test_the_stubs_parse_and_ship_with_the_marker():
    for path in STUBS:
        _tree(path)
    assert (ROOT / "py.typed").is_file()


def test_tensor_methods_from_every_installer_are_declared():
    methods = _functions(_tensor_class().body)
    positional, keywords, _ = _params(methods["backward"])  # autograd's installer
    assert positional == ["self", "gradient", "retain_graph", "create_graph", "inputs"]
    assert _params(methods["view"]) == (["self"], [], "size")  # x.view(2, 3) and x.view((2, 3))
    assert _params(methods["add"]) == (["self", "other"], ["alpha"], None)  # the schema
    assert _params(methods["add_"]) == (["self", "other"], ["alpha"], None)  # in place
    assert ast.unparse(methods["add_"].returns) == "Tensor"
    assert _params(methods["__add__"]) == (["self", "other"], [], None)
    assert ast.unparse(methods["topk"].returns) == "_TopkResult"  # a NamedTuple: values, indices
    assert _params(methods["narrow"])[0] == ["self", "dim", "start", "length"]  # program_methods
    assert "allclose" in methods and "__getitem__" in methods  # comparison, indexing
    properties = {f.name for f in _tensor_class().body
                  if isinstance(f, ast.FunctionDef) and any(ast.unparse(d) == "property" for d in f.decorator_list)}
    assert {"shape", "dtype", "device", "data", "T", "mT", "is_leaf", "ndim"} <= properties
    attributes = {n.target.id: ast.unparse(n.annotation) for n in _tensor_class().body if isinstance(n, ast.AnnAssign)}
    assert attributes["grad"] == "Tensor | None" and attributes["requires_grad"] == "_bool"
    assert "grad_fn" in attributes


def test_every_public_tensor_attribute_is_declared():
    declared = {n.name for n in _tensor_class().body if isinstance(n, ast.FunctionDef)}
    declared |= {n.target.id for n in _tensor_class().body if isinstance(n, ast.AnnAssign)}
    runtime = {name for name in dir(ember.Tensor) if not name.startswith("_")}
    assert runtime - declared == set()


def test_ember_functions_are_typed_from_the_schema():
    functions = _functions(_tree("__init__.pyi").body)
    add = functions["add"]
    assert _params(add) == (["input", "other"], ["alpha", "out"], None)
    assert ast.unparse(add.args.kw_defaults[0]) == "1" and ast.unparse(add.returns) == "Tensor"
    assert _params(functions["zeros"]) == ([], ["out", "requires_grad", "layout", "pin_memory", "dtype", "device"],
                                         "size")
    assert _params(functions["cat"]) == (["tensors", "dim"], ["out"], None)
    assert ast.unparse(functions["cat"].args.args[0].annotation) == "Sequence[Tensor]"
    assert ast.unparse(functions["chunk"].returns) == "_tuple[Tensor, ...]"
    assert ast.unparse(functions["is_tensor"].returns) == "_bool"


def test_every_public_ember_name_is_declared():
    tree = _tree("__init__.pyi")
    declared = set(_functions(tree.body)) | {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    declared |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    declared |= {a.asname for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names if a.asname
                 and not a.asname.startswith("_")}
    runtime = {name for name, value in vars(ember).items()
               if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"}
    assert runtime - declared == set()


def test_nn_functional_declares_every_public_function():
    import ember.nn.functional as functional
    functions = _functions(_tree("nn/functional/__init__.pyi").body)
    positional, _, _ = _params(functions["cross_entropy"])
    assert positional == ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
                          "label_smoothing"]
    assert ast.unparse(functions["relu"].returns) == "_Tensor"
    runtime = {name for name, value in vars(functional).items()
               if not name.startswith("_") and callable(value) and not inspect.ismodule(value)}
    assert runtime - set(functions) == set()


def test_declared_results_match_the_runtime():
    """The stubs' types for attributes installed as lambdas and closures are what they return."""
    x = ember.ones(2, 2)
    mask = ember.ones(2, 2, dtype=ember.bool)
    calls = {"T": lambda: x.T, "mT": lambda: x.mT, "nbytes": lambda: x.nbytes, "itemsize": lambda: x.itemsize,
             "retains_grad": lambda: x.retains_grad, "t": x.t, "expand_as": lambda: x.expand_as(x),
             "view_as": lambda: x.view_as(x), "reshape_as": lambda: x.reshape_as(x),
             "new_zeros": lambda: x.new_zeros(2), "new_ones": lambda: x.new_ones(2),
             "new_empty": lambda: x.new_empty(2), "__neg__": lambda: -x, "__pos__": lambda: +x,
             "__abs__": lambda: abs(x), "__invert__": lambda: ~mask, "__and__": lambda: mask & mask,
             "__or__": lambda: mask | mask, "__xor__": lambda: mask ^ mask}
    assert set(calls) == set(DECLARED_RESULTS)
    kinds = {"Tensor": ember.Tensor, "int": int, "bool": bool}
    for name, call in calls.items():
        assert isinstance(call(), kinds[DECLARED_RESULTS[name]]), name


# -- a type checker reading the stubs -----------------------------------------------------------

GOOD = """
    import ember
    import ember.nn.functional as F

    x = ember.randn(3, 4, requires_grad=True)
    w = ember.zeros((4, 2))
    y = (x @ w).relu().sum()
    y.backward()
    values, indices = ember.sort(x, dim=1)
    top = x.topk(2).values + 1
    v = x.view(2, 6).T
    x += 1
    n: int = x.shape[0]
    d: ember.dtype = x.dtype
    z = ember.add(x, 1, alpha=2)
    loss = F.cross_entropy(F.relu(x), ember.tensor([0, 1, 2]))
    legacy = ember.FloatTensor([1.0, 2.0])
    total = legacy.sum() + 1
    reveal_type(x.T)
    reveal_type(x.grad)
    reveal_type(F.relu(x))
    reveal_type(legacy)
"""

BAD = """
    import ember
    x = ember.ones(2)
    x.bakward()
    ember.add(x, 1, alpha="two")
    x.view("a")
"""


def _mypy(tmp_path: Path, source: str) -> str:
    """mypy's report on ``source``, with ``ember`` laid out as the wheel lays it out (core/ as ember/)."""
    package = tmp_path / "site" / "ember"
    package.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in ("backends", "conformance"):
        (package / name).symlink_to(Path(sys.modules[f"ember.{name}"].__file__).parent)
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(source), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
                           "--python-executable", sys.executable, str(snippet)], capture_output=True, text=True,
                          env={"MYPYPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin",
                               "PYTHONPATH": ":".join(p for p in sys.path if p)}, cwd=tmp_path)
    return done.stdout + done.stderr


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_follows_tensor_methods_and_functions(tmp_path):
    assert shutil.which("true")  # the environment below keeps a usable PATH
    report = _mypy(tmp_path, GOOD)
    assert "error" not in report, report
    assert 'Revealed type is "ember.tensor.Tensor"' in report
    assert 'Revealed type is "ember.tensor.Tensor | None"' in report
    assert report.count('Revealed type is "ember.tensor.Tensor"') == 2
    assert 'Revealed type is "ember.FloatTensor"' in report


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_reports_wrong_calls(tmp_path):
    report = _mypy(tmp_path / "bad", BAD)
    assert '"Tensor" has no attribute "bakward"' in report, report
    assert 'Argument "alpha" to "add"' in report, report
    assert 'Argument 1 to "view" of "Tensor"' in report, report
