"""The peak-memory benchmark: every row's child runs its workload and reports its peaks; the table reads them right."""
import json
import pathlib
import subprocess
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import memory  # noqa: E402

MiB = 2 ** 20


def _child(lib: str, row: str, steps: int) -> dict[str, int]:
    done = subprocess.run([sys.executable, str(BENCHMARKS / "memory.py"), "--lib", lib, "--row", row,
                           "--steps", str(steps)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("row", [row.key for row in memory.ROWS])
def test_child_reports_its_peaks_in_order(row):
    peaks = _child("ember", row, steps=2)
    assert set(peaks) == {"baseline", "first", "peak"}
    assert 10 * MiB < peaks["baseline"] <= peaks["first"] <= peaks["peak"] < 8 * 1024 * MiB


def test_torch_child_runs_the_same_rows():
    pytest.importorskip("torch")
    peaks = _child("torch", memory.ROWS[0].key, steps=2)
    assert 10 * MiB < peaks["baseline"] <= peaks["first"] <= peaks["peak"]


def test_row_keys_are_unique_and_quick_runs_are_shorter():
    keys = [row.key for row in memory.ROWS]
    assert len(keys) == len(set(keys)) and {"mlp", "gpt"} <= set(keys)
    for row in memory.ROWS:
        assert 2 <= row.steps_for(quick=True) < row.steps_for(quick=False) == row.steps


def test_results_are_medians_of_growth_later_growth_and_peak():
    runs = {"ember": [{"baseline": 100 * MiB, "first": 110 * MiB, "peak": 112 * MiB},
                      {"baseline": 100 * MiB, "first": 130 * MiB, "peak": 130 * MiB},
                      {"baseline": 90 * MiB, "first": 100 * MiB, "peak": 104 * MiB}],
            "torch": [{"baseline": 300 * MiB, "first": 310 * MiB, "peak": 310 * MiB}]}
    growth, later, peak = memory._results(memory.ROWS[0], 200, runs, "PyTorch")
    assert growth.values == {"Ember": 14 * MiB, "PyTorch": 10 * MiB}
    assert growth.target == memory.TARGET and growth.ratio() == pytest.approx(1.4) and growth.met is False
    assert later.values == {"Ember": 2 * MiB, "PyTorch": 0} and later.ratio() is None and later.target is None
    assert peak.values == {"Ember": 112 * MiB, "PyTorch": 310 * MiB}
    assert len({growth.key, later.key, peak.key}) == 3 and "200 steps" in growth.name
