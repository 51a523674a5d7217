"""The example scripts run end to end, as a user would start them: in their own process, from the command line.

``train_digits.py`` trains two epochs with a checkpoint, then resumes it for a third; ``train_sequence.py``
trains its LSTM and its transformer for a few steps. Each checks its exit status and the lines it prints.
The digits example needs scikit-learn (for the data set) and tqdm; without them its test is skipped.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PERCENT = r"(\d+(?:\.\d+)?)%"

_missing = [name for name in ("sklearn", "tqdm") if importlib.util.find_spec(name) is None]
needs_digits_dependencies = pytest.mark.skipif(
    bool(_missing), reason=f"examples/train_digits.py needs scikit-learn and tqdm; missing: {', '.join(_missing)} "
                           "(pip install -e '.[examples]')")


def run_example(script: str, *args, cwd: Path) -> str:
    """Run ``examples/<script>`` with ``args`` in ``cwd``; its stdout, after asserting that it succeeded."""
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{script} {' '.join(map(str, args))} exited with {done.returncode}:\n" \
                                 f"{done.stdout}\n{done.stderr}"
    return done.stdout


def accuracy(pattern: str, output: str) -> float:
    """The percentage that ``pattern`` (with PERCENT in it) captures in ``output``, checked to be one."""
    match = re.search(pattern, output)
    assert match, f"no line matching {pattern!r} in:\n{output}"
    value = float(match.group(1))
    assert 0.0 <= value <= 100.0, match.group(0)
    return value


@needs_digits_dependencies
def test_train_digits_checkpoints_and_resumes(tmp_path):
    checkpoint = tmp_path / "digits.ckpt"
    first = run_example("train_digits.py", "--epochs", 2, "--checkpoint", checkpoint, cwd=tmp_path)
    assert checkpoint.is_file() and checkpoint.stat().st_size > 0
    assert "epoch 1:" in first and "epoch 2:" in first
    # ten classes: a CNN that learned nothing scores about 10%
    assert accuracy(rf"test accuracy {PERCENT} on \d+ held-out digits", first) > 50.0, first

    resumed = run_example("train_digits.py", "--epochs", 3, "--checkpoint", checkpoint, "--resume", cwd=tmp_path)
    assert f"resumed from {checkpoint} after epoch 2" in resumed, resumed
    assert "epoch 1:" not in resumed and "epoch 2:" not in resumed and "epoch 3:" in resumed, resumed
    accuracy(rf"epoch 3: loss \d+\.\d+, test accuracy {PERCENT}", resumed)
    accuracy(rf"test accuracy {PERCENT} on \d+ held-out digits", resumed)

    import ember
    assert ember.load(checkpoint)["epoch"] == 3


@needs_digits_dependencies
def test_train_digits_on_opencl(tmp_path):
    """The main job on the OpenCL backend (PoCL here): it learns, as on the CPU."""
    import ember
    status = ember.backends.available().get("opencl", "unavailable: not registered")
    if status != "available":
        pytest.skip(f"opencl {status}")
    output = run_example("train_digits.py", "--device", "opencl", "--epochs", 2, cwd=tmp_path)
    assert "training took" in output and output.rstrip().endswith("on opencl"), output
    assert accuracy(rf"test accuracy {PERCENT} on \d+ held-out digits", output) > 50.0, output


@pytest.mark.parametrize("model,steps", [("lstm", 30), ("transformer", 20)])
def test_train_sequence(model, steps, tmp_path):
    args = ("--steps", steps) if model == "lstm" else ("--model", model, "--steps", steps)
    output = run_example("train_sequence.py", *args, cwd=tmp_path)
    accuracy(rf"{model}: per-step accuracy {PERCENT} on fresh sequences after {steps} steps", output)
