"""``python -m ember.conformance``: the op × dtype matrix, the Markdown report, progress and the exit status.

The runs are filtered with ``-k`` to a few ops, to stay quick; the full run is scripts/test.sh's job.
A backend with a deliberately wrong ``neg`` kernel (the template plugin's, broken), installed as a
plugin through the entry-point group, shows what a failure looks like.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ember.conformance.matrix import FAIL, NOT_RUN, PASS, SKIP, UNSUPPORTED, build
from ember.conformance.progress import Progress
from ember.conformance.record import Result
from ember.conformance.target import resolve

TEMPLATE = Path(__file__).resolve().parents[1] / "examples" / "template_backend" / "ember_template_backend.py"
_WRONG_NEG = """
import importlib.util
from ember.dispatch import PLUGIN_API_VERSION, hookimpl

spec = importlib.util.spec_from_file_location("_template_for_wrongneg", {template!r})
template = importlib.util.module_from_spec(spec)
spec.loader.exec_module(template)

class WrongNegBackend(template.TemplateBackend):
    device_type = "wrongneg"
    kernels = {{**template.KERNELS, "neg": lambda a: a.copy()}}  # forgets to negate

@hookimpl
def ember_plugin_api_version():
    return PLUGIN_API_VERSION

@hookimpl
def ember_register_backend():
    return WrongNegBackend()
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The environment of a process that has the wrongneg plugin installed."""
    site = tmp_path_factory.mktemp("site")
    (site / "wrongneg_plugin.py").write_text(_WRONG_NEG.format(template=str(TEMPLATE)))
    dist = site / "wrongneg_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: wrongneg-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ember.backends]\nwrongneg = wrongneg_plugin\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def _report(env, tmp_path, *args):
    report = tmp_path / "report.md"
    out = subprocess.run([sys.executable, "-m", "ember.conformance", *args, "--report", str(report)],
                         capture_output=True, text=True, timeout=300, env=env)
    return out, report.read_text(encoding="utf-8") if report.exists() else ""


def _row(stdout: str, op: str) -> list[str]:
    return next(line.split() for line in stdout.splitlines() if line.split()[:1] == [op])


def test_passing_run_prints_the_matrix_writes_markdown_and_exits_zero(env, tmp_path):
    out, report = _report(env, tmp_path, "--backend", "cpu", "-k", "test_values and (neg- or eq-)")
    assert out.returncode == 0, out.stdout + out.stderr
    assert _row(out.stdout, "neg") == ["neg", "kernel", "-"] + ["ok"] * 11  # bool: refused; complex: both run
    assert _row(out.stdout, "eq") == ["eq", "kernel"] + ["ok"] * 12
    assert _row(out.stdout, "softmax") == ["softmax", "override", "-", "-", "-", "-", "-", "-", ".", ".", ".", ".", "-",
                                           "-"]
    assert "[" in out.stderr and "100%" in out.stderr  # the progress display
    assert "# Ember conformance report: `cpu`" in report and "**PASS**" in report
    assert "| `neg` | kernel | — | ✅ | ✅ |" in report


def test_failing_op_is_marked_listed_and_exits_nonzero(env, tmp_path):
    out, report = _report(env, tmp_path, "--backend", "wrongneg", "-k", "test_values and not generated and (neg- or abs-)")
    assert out.returncode == 1, out.stdout + out.stderr
    # complex128 runs on cpu and the template only, under the CI profile (conformance/profiles.py)
    assert _row(out.stdout, "neg")[3:] == ["FAIL"] * 10 + ["."]
    assert _row(out.stdout, "abs")[3:] == ["ok"] * 10 + ["."]
    assert re.search(r"^FAIL \S*test_values\[neg-float32\]: ", out.stderr, re.MULTILINE)  # as it happens
    assert "**FAIL**" in report and "## Failures" in report and "test_values[neg-float32]" in report


def test_unavailable_backend_exits_with_its_reason(env, tmp_path):
    out, report = _report(env, tmp_path, "--backend", "nosuch")
    assert out.returncode == 2
    assert "backend 'nosuch' is unavailable" in out.stderr and "unknown device type 'nosuch'" in out.stderr
    assert report == ""


def _result(op, dtype, outcome, message=""):
    return Result(f"test_x[{op}-{dtype}]", "test_x", "test_x", op, dtype, outcome, message)


def test_cells_combine_their_tests():
    cpu = resolve("cpu")
    matrix = build([_result("add", "float32", "passed"), _result("add", "float32", "skipped"),
                    _result("add", "int32", "skipped"), _result("add", "int64", "passed"),
                    _result("add", "int64", "failed"), _result("neg", "bool", "failed"),
                    Result("test_y", "test_y", "test_y", None, None, "passed")], cpu)
    add = matrix.rows["add"]
    assert (add["float32"], add["int32"], add["int64"], add["float16"]) == (PASS, SKIP, FAIL, NOT_RUN)
    assert matrix.rows["neg"]["bool"] == FAIL  # a refusal that failed is a failure, not "unsupported"
    assert matrix.rows["neg"]["uint8"] == NOT_RUN and matrix.rows["mean"]["int64"] == UNSUPPORTED
    assert matrix.other == {"test_y": {"passed": 1}}


def test_progress_logs_a_line_per_tenth_and_every_failure():
    stream = io.StringIO()
    progress = Progress(stream, interactive=False)
    for done in range(1, 21):
        progress(_result("add", "float32", "failed" if done == 7 else "passed", "wrong values"), done, 20)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[ 2/20]  10%  0 failed")
    assert "FAIL test_x[add-float32]: wrong values" in lines
    assert lines[-1].startswith("[20/20] 100%  1 failed") and len(lines) == 11
