"""The benchmark's real-program cases run the same work on Ember and PyTorch, and its startup child reports times."""
import json
import pathlib
import subprocess
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

#: one call of these takes seconds; their builds (and so the output comparison) still run
SLOW_CALLS = {"sine_lbfgs", "sample_64"}


@pytest.fixture(scope="module")
def sides():
    pytest.importorskip("torch")
    from sides import Side
    return [Side("Ember", "ember"), Side("PyTorch", "torch")]


@pytest.mark.parametrize("key", [p.key for p in __import__("programs").PROGRAMS])
def test_program_agrees_with_pytorch_and_runs(sides, key):
    import programs
    program = next(p for p in programs.PROGRAMS if p.key == key)
    calls, note = programs._case(program).build(sides)
    assert note == "", note  # same weights, same fixed input: the same output on both sides
    if key not in SLOW_CALLS:
        for call in calls:
            call()


def test_makemore_examples_match_pytorch(sides):
    from program_models import char_example
    word = [5, 1, 14, 14, 1]
    ember_x, ember_y = char_example(sides[0].lib, word, 8)
    torch_x, torch_y = char_example(sides[1].lib, word, 8)
    assert ember_x.tolist() == torch_x.tolist() == [0, 5, 1, 14, 14, 1, 0, 0, 0]
    assert ember_y.tolist() == torch_y.tolist() == [5, 1, 14, 14, 1, 0, -1, -1, -1]


def test_startup_child_times_the_import_and_a_first_step():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "startup.py"), "--lib", "ember", "--case", "char_mlp"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    times = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(times) == {"import", "first"}
    assert 0 < times["import"] < 60 and 0 < times["first"] < 60
