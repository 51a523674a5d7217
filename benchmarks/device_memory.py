"""Peak device memory of the training steps on a GPU, each framework in a fresh process of its own.

Each child imports one framework, and for each float32 workload builds the model and optimizer on the device,
runs warm-up steps (so that the gradients and the optimizer state exist), takes the memory allocated then as the
baseline, resets the peak, runs more steps and reads the peak (``cuda.max_memory_allocated``, the same query in
both frameworks). The table compares the absolute peak (weights, gradients, optimizer state and the step's
activations and temporaries) and the growth over the baseline (what one step itself needs).

    python benchmarks/device_memory.py --lib ember --device cuda     (child mode: prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
from typing import Callable

from harness import Result, Table

WARMUP, STEPS = 3, 5
REPEATS = {True: 1, False: 3}
LIBS = {"ember": "Ember", "torch": "PyTorch"}


def child(lib_name: str, device: str) -> dict[str, dict[str, int]]:
    """In this process: {workload key: {"baseline": bytes, "peak": bytes}} for the float32 workloads."""
    from sides import Side
    from training import FLOAT32_WORKLOADS, new_model, training_step

    side = Side(LIBS[lib_name], lib_name, device)
    cuda = side.lib.cuda
    found = {}
    for workload in FLOAT32_WORKLOADS:
        step = training_step(side, workload, new_model(side, workload))
        for _ in range(WARMUP):
            step()
        cuda.synchronize()
        baseline = cuda.memory_allocated()
        cuda.reset_peak_memory_stats()
        for _ in range(STEPS):
            step()
        cuda.synchronize()
        found[workload.key] = {"baseline": baseline, "peak": cuda.max_memory_allocated()}
        del step
    return found


def _spawn(lib_name: str, device: str) -> dict[str, dict[str, int]]:
    script = pathlib.Path(__file__).resolve()
    out = subprocess.run([sys.executable, str(script), "--lib", lib_name, "--device", device],
                         capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{LIBS[lib_name]} child exited with {out.returncode}: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(device: str, with_torch: bool, quick: bool, progress: Callable[[str], None] = lambda line: None) -> Table:
    """Fresh-process runs taking turns (Ember, PyTorch, Ember, ...); medians of the peak and of the growth."""
    from training import FLOAT32_WORKLOADS

    libs = ["ember", "torch"] if with_torch else ["ember"]
    reference = "PyTorch" if with_torch else None
    runs: dict[str, list] = {lib: [] for lib in libs}
    note = ""
    try:
        for i in range(REPEATS[quick]):
            for lib in libs:
                progress(f"Peak device memory: {LIBS[lib]} child {i + 1}/{REPEATS[quick]} on {device}")
                runs[lib].append(_spawn(lib, device))
    except RuntimeError as exc:  # a broken child must not cost the rest of the report
        progress(f"  failed: {exc}")
        note = f"failed: {exc}. "
    results = []
    for workload in FLOAT32_WORKLOADS:
        peak = Result(f"{workload.key}_device_peak", f"{workload.name}: peak", {}, "Ember", reference)
        growth = Result(f"{workload.key}_device_growth", f"{workload.name}: peak − baseline", {}, "Ember", reference)
        for lib, found in runs.items():
            if found and len(found) == REPEATS[quick]:
                peak.values[LIBS[lib]] = statistics.median(r[workload.key]["peak"] for r in found)
                growth.values[LIBS[lib]] = statistics.median(
                    r[workload.key]["peak"] - r[workload.key]["baseline"] for r in found)
        results += [peak, growth]
    note += (f"cuda.max_memory_allocated over {STEPS} steps after {WARMUP} warm-up steps, median of "
             f"{REPEATS[quick]} fresh process(es) per framework; baseline: memory allocated after the warm-up "
             "(weights, gradients, optimizer state). Each child imports only its own framework.")
    return Table("device_memory", f"Peak device memory of a training step ({device})", [LIBS[lib] for lib in libs],
                 results, unit="bytes", note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description="child mode of the peak device memory benchmark")
    parser.add_argument("--lib", choices=sorted(LIBS), required=True)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    print(json.dumps(child(args.lib, args.device)))


if __name__ == "__main__":
    main()
