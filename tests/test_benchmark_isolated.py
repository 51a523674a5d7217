"""The benchmark's separate-process mode: each framework timed alone in its own process, and the table built from them."""
import itertools
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
TIME = re.compile(r"^(\d+\.\d+) (µs|ms|s)$")
SCALE = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _section_rows(report: str, title: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the Markdown table under ``### title``."""
    lines = report.splitlines()
    after = lines[lines.index(f"### {title}") + 1:]
    first = next(i for i, line in enumerate(after) if line.startswith("|"))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), after[first:]))
    return _cells(table[0]), [_cells(line) for line in table[2:]]


def _seconds(cell: str) -> float:
    match = TIME.match(cell)
    assert match, f"not a time: {cell!r}"
    return float(match.group(1)) * SCALE[match.group(2)]


def test_isolated_overhead_case_has_both_medians_and_their_ratio(tmp_path):
    pytest.importorskip("torch")
    report = tmp_path / "report.md"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "run.py"), "--isolated", "--quick", "--only", "overhead",
                           "--cases", "add", "--processes", "1", "--write", str(report)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = report.read_text()
    assert "separate processes" in text
    header, rows = _section_rows(text, "Per-op overhead")
    assert header[:4] == ["case", "Ember", "PyTorch", "Ember/PyTorch"]
    assert [row[0] for row in rows] == ["x + x (10 float32)"]
    ember, torch_time = _seconds(rows[0][1]), _seconds(rows[0][2])
    ratio = float(rows[0][3].rstrip("×"))
    assert ratio == pytest.approx(ember / torch_time, rel=0.02)
    # each child reports the frameworks in its sys.modules; neither loaded the other's
    assert "frameworks loaded: Ember processes: ember; PyTorch processes: torch)" in text


def test_a_process_that_loaded_the_other_framework_is_refused():
    pytest.importorskip("torch")
    code = ("import torch, ember, isolated\n"
            "isolated.check_alone('ember', 'in this test')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "IsolationError: the Ember process imported torch in this test" in done.stderr
