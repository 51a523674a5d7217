"""The op files stay searchable and small, declaration hooks read arguments by name, and
``python -m ember.dispatch OPNAME`` reports an op's declaration and implementations."""
from __future__ import annotations

import linecache
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ember  # (declares every op)
from ember.dispatch.schema.bound import BoundArgs
from ember.dispatch.schema import OPS

OPS_DIR = Path(ember.dispatch.ops.__file__).parent
MAX_LINES = 800


def _declaration_line(op) -> str:
    path, line = op.source
    return linecache.getline(path, line)


def test_every_op_records_the_statement_declaring_it():
    missing = [name for name, op in OPS.items() if op.source is None or not _declaration_line(OPS[name])]
    assert not missing


def test_every_op_name_is_on_its_declaration_line():
    """Searching the op files for an op's name finds where it is declared, factories included."""
    hidden = [(name, f"{Path(op.source[0]).name}:{op.source[1]}") for name, op in OPS.items()
              if not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", _declaration_line(op))]
    assert not hidden, f"ops whose name is not on their declaration line: {hidden}"


def test_op_files_stay_small():
    long = {path.relative_to(OPS_DIR).as_posix(): n for path in OPS_DIR.rglob("*.py")
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"op modules over {MAX_LINES} lines (split them by topic): {long}"


def test_hooks_read_arguments_by_name_only():
    op = OPS["conv2d"]
    values = [None, None, None, 1, 0, 1, 1]
    args = BoundArgs(op, values)
    args["stride"] = (2, 2)
    assert values[op.param_index["stride"]] == (2, 2) and args["groups"] == 1
    with pytest.raises(TypeError, match="by parameter name, not by position"):
        args[3]
    with pytest.raises(KeyError, match="conv2d has no parameter 'strides'"):
        args["strides"]
    with pytest.raises(TypeError):
        _, _ = args  # no unpacking by position
    assert "padding" in args and "padding_mode" not in args and args.get("padding_mode", "zeros") == "zeros"


def test_normalize_sees_the_values_the_call_bound():
    """A hook that rewrites by name rewrites the slot of that parameter (conv2d's padding becomes pairs)."""
    op = OPS["conv2d"]
    x, w = ember.zeros(1, 2, 5, 5), ember.zeros(3, 2, 3, 3)
    values = [x, w, None, 2, 1, 1, 1]
    op.normalize_values(values)
    assert values[3:7] == [(2, 2), ((1, 1), (1, 1)), (1, 1), 1]


def _inspect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember.dispatch", *args], capture_output=True, text=True,
                          timeout=300)


def test_inspector_prints_the_declaration_and_implementations():
    result = _inspect("conv2d")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "conv2d: composite op of category nn" in out
    assert "conv2d(Tensor input, Tensor weight, Tensor? bias=None" in out
    path, line = OPS["conv2d"].source
    assert re.search(rf"declared at: \S*{Path(path).name}:{line}\b", out)
    assert "derivative:  declared for input, weight, bias" in out
    assert re.search(r"^\s+cpu\s+own kernel: \S+\.py:\d+$", out, re.M)  # and where its code is
    assert re.search(r"^\s+template\s+composite definition", out, re.M)


def test_inspector_says_a_kernel_is_rendered_from_the_formula():
    if ember.backends.available().get("opencl") != "available":
        pytest.skip("the OpenCL backend is not available")
    out = _inspect("mul").stdout
    assert re.search(r"^\s+opencl\s+own kernel, rendered from its formula: \S*elementwise\.py:\d+$", out, re.M)


def test_inspector_names_a_primitive_a_backend_lacks():
    from ember.dispatch import registry
    template = registry.backends().get("template")
    if template is None:
        pytest.skip("the template backend plugin is not installed")
    lacking = next((op for op in OPS.values() if op.kind == "primitive" and op.name not in template.kernels), None)
    if lacking is None:
        pytest.skip("the template backend implements every primitive")
    out = _inspect(lacking.name).stdout
    assert re.search(r"^\s+template\s+no kernel: fails unless the explicit CPU fallback is on", out, re.M)


def test_inspector_suggests_a_close_name_for_an_unknown_op():
    result = _inspect("convd2")
    assert result.returncode == 2
    assert re.search(r"no op named 'convd2'; did you mean .*\bconv2d\b", result.stderr)
