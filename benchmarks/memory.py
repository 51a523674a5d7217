"""Peak resident memory of the MLP training loop, each framework in a fresh process of its own.

ru_maxrss is a process-wide high-water mark, so the two frameworks cannot share a process: PyTorch's
import alone would set the mark for both. Each child imports one framework, builds the MLP, its
optimizer and batch, records ru_maxrss (the baseline), runs the loop, and records it again. The
target compares the growth (peak minus baseline): the memory the loop itself needs. The absolute
peak, which includes each framework's import, is reported beside it. The child builds the model
with its own framework's initialisation, which does not change how much memory the loop takes.

    python benchmarks/memory.py --lib ember --steps 200      (child mode: prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import statistics
import subprocess
import sys
from typing import Callable

from harness import Result, Table

STEPS = {True: 50, False: 200}
REPEATS = {True: 1, False: 3}
LIBS = {"ember": "Ember", "torch": "PyTorch"}


def _maxrss_bytes() -> int:
    """ru_maxrss in bytes: Linux reports KiB, macOS bytes."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def child(lib_name: str, steps: int) -> dict[str, int]:
    """Run the MLP loop in this process and return its baseline and peak RSS in bytes."""
    import importlib

    from sides import Side
    from training import WORKLOADS, new_model, training_step

    lib = importlib.import_module(lib_name)
    side = Side(LIBS[lib_name], lib)
    mlp = next(w for w in WORKLOADS if w.key == "mlp")
    step = training_step(side, mlp, new_model(side, mlp))
    baseline = _maxrss_bytes()
    for _ in range(steps):
        step()
    return {"baseline": baseline, "peak": _maxrss_bytes()}


def _spawn(lib_name: str, steps: int) -> dict[str, int]:
    script = pathlib.Path(__file__).resolve()
    out = subprocess.run([sys.executable, str(script), "--lib", lib_name, "--steps", str(steps)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(with_torch: bool, quick: bool, progress: Callable[[str], None] = lambda line: None) -> Table:
    """Interleaved fresh-process runs (Ember, PyTorch, Ember, ...); medians of growth and of peak."""
    steps, repeats = STEPS[quick], REPEATS[quick]
    libs = ["ember", "torch"] if with_torch else ["ember"]
    runs: dict[str, list[dict[str, int]]] = {lib: [] for lib in libs}
    for i in range(repeats):
        for lib in libs:
            progress(f"Peak memory: {LIBS[lib]} child {i + 1}/{repeats}, {steps} MLP steps")
            runs[lib].append(_spawn(lib, steps))
    growth = {LIBS[lib]: statistics.median(r["peak"] - r["baseline"] for r in rs) for lib, rs in runs.items()}
    peak = {LIBS[lib]: statistics.median(r["peak"] for r in rs) for lib, rs in runs.items()}
    reference = "PyTorch" if with_torch else None
    results = [
        Result("rss_growth", f"MLP loop, {steps} steps: peak RSS − baseline", growth, "Ember", reference, target=1.2),
        Result("rss_peak", f"MLP loop, {steps} steps: absolute peak RSS", peak, "Ember", reference),
    ]
    note = (f"ru_maxrss of a fresh process per run, median of {repeats}; baseline taken after imports, "
            "model, optimizer and batch creation. Each child imports only its own framework (and NumPy).")
    return Table("memory", "Peak memory (RSS)", list(growth), results, unit="bytes", note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description="child mode of the peak-RSS benchmark")
    parser.add_argument("--lib", choices=sorted(LIBS), required=True)
    parser.add_argument("--steps", type=int, default=STEPS[False])
    args = parser.parse_args()
    print(json.dumps(child(args.lib, args.steps)))


if __name__ == "__main__":
    main()
