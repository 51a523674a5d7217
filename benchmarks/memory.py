"""Peak resident memory of training loops, each (framework, workload) in a fresh process of its own.

Peak RSS is a process-wide high-water mark, so the two frameworks cannot share a process: PyTorch's
import alone would set the mark for both. Each child imports one framework, builds one workload (its
model, optimizer and batch), records the peak so far (the baseline), runs one step, records the peak
again, runs the remaining steps and records it a last time. The target compares the growth (peak minus
baseline): the memory the loop itself needs. Beside it: the growth after the first step (steady state:
what later steps add, such as caches that keep growing), and the absolute peak, which includes each
framework's import and so compares whole processes.

The first step pays for everything loaded lazily. Ember loads numba, its JIT (with LLVM), on the first
kernel that needs it, about 100 MiB; PyTorch loads its kernel libraries at import, so they sit in its
baseline. That is why the absolute-peak row can favour Ember while the growth row does not.

On Linux the peak is read from VmHWM in /proc/self/status rather than from ru_maxrss: the kernel
carries ru_maxrss over exec, so a child of this (large) benchmark process would report its parent's
peak. VmHWM is the same high-water mark kept per address space, which exec starts afresh.

A row is one line: a key, a description, a function building the workload's step for a Side, and its
number of steps; ``training(key, steps)`` and ``program(key, steps)`` make one from a case of training.py or
programs.py.

    python benchmarks/memory.py --lib ember --row mlp --steps 200      (child mode: prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable

from harness import Call, Result, Table
from programs import PROGRAMS
from sides import Side
from training import WORKLOADS, new_model, training_step

REPEATS = {True: 1, False: 3}
LIBS = {"ember": "Ember", "torch": "PyTorch"}
TARGET = 1.2  # the loop's growth at most 1.2× PyTorch's


@dataclass(frozen=True)
class Row:
    """One workload: ``build(side)`` makes its model, optimizer and inputs and returns one step of it.

    ``steps``: how many steps a full run takes (a quick run a quarter), enough for the peak to settle.
    """
    key: str
    description: str
    build: Callable[[Side], Call]
    steps: int

    def steps_for(self, quick: bool) -> int:
        return max(2, self.steps // 4) if quick else self.steps


def training(key: str, steps: int) -> Row:
    """training.py's workload ``key`` as a row: its full training step, its model with the framework's own init."""
    workload = next(w for w in WORKLOADS if w.key == key)
    return Row(key, workload.name, lambda side: training_step(side, workload, new_model(side, workload)), steps)


def program(key: str, steps: int) -> Row:
    """programs.py's case ``key`` as a row: its timed call, built with the case's weights."""
    case = next(p for p in PROGRAMS if p.key == key)
    return Row(key, case.name, lambda side: case.build(side)[0], steps)


ROWS = [
    training("mlp", steps=200),
    training("gpt", steps=20),  # a step takes about 0.3 s; the peak settles within a few
    program("lstm_lm", steps=40),
]


def peak_rss_bytes() -> int:
    """This process's peak resident set: VmHWM where /proc has it, else ru_maxrss (KiB on Linux, bytes on macOS)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def child(lib_name: str, row: Row, steps: int) -> dict[str, int]:
    """Run ``steps`` steps of ``row`` in this process; the peak RSS in bytes before, after one and after all."""
    step = row.build(Side(LIBS[lib_name], lib_name))
    baseline = peak_rss_bytes()
    step()
    first = peak_rss_bytes()
    for _ in range(steps - 1):
        step()
    return {"baseline": baseline, "first": first, "peak": peak_rss_bytes()}


def _spawn(lib_name: str, row: Row, steps: int) -> dict[str, int]:
    script = pathlib.Path(__file__).resolve()
    out = subprocess.run([sys.executable, str(script), "--lib", lib_name, "--row", row.key, "--steps", str(steps)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{LIBS[lib_name]} child for {row.key} exited with {out.returncode}: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _results(row: Row, steps: int, runs: dict[str, list[dict[str, int]]], reference: str | None) -> list[Result]:
    """The row's three results: growth (with the target), growth after the first step, absolute peak."""
    def median(of: Callable[[dict[str, int]], int]) -> dict[str, float]:
        return {LIBS[lib]: statistics.median(map(of, rs)) for lib, rs in runs.items() if rs}
    name = f"{row.description}, {steps} steps"
    return [Result(f"{row.key}_rss_growth", f"{name}: peak RSS − baseline",
                   median(lambda r: r["peak"] - r["baseline"]), "Ember", reference, target=TARGET),
            Result(f"{row.key}_rss_later", f"{name}: growth after the first step",
                   median(lambda r: r["peak"] - r["first"]), "Ember", reference),
            Result(f"{row.key}_rss_peak", f"{name}: absolute peak RSS",
                   median(lambda r: r["peak"]), "Ember", reference)]


def table(with_torch: bool, quick: bool, progress: Callable[[str], None] = lambda line: None,
          rows: list[Row] = ROWS) -> Table:
    """Per row, interleaved fresh-process runs (Ember, PyTorch, Ember, ...); medians of each measure."""
    repeats = REPEATS[quick]
    libs = ["ember", "torch"] if with_torch else ["ember"]
    reference = "PyTorch" if with_torch else None
    results = []
    for row in rows:
        steps = row.steps_for(quick)
        runs: dict[str, list[dict[str, int]]] = {lib: [] for lib in libs}
        try:
            for i in range(repeats):
                for lib in libs:
                    progress(f"Peak memory: {LIBS[lib]} child {i + 1}/{repeats}, {steps} {row.key} steps")
                    runs[lib].append(_spawn(lib, row, steps))
        except RuntimeError as exc:  # a broken child costs its own row only
            progress(f"  failed: {exc}")
            row_results = _results(row, steps, {lib: [] for lib in libs}, reference)
            for result in row_results:
                result.note = f"failed: {exc}"
        else:
            row_results = _results(row, steps, runs, reference)
        results += row_results
    note = (f"Peak RSS (VmHWM) of a fresh process per run, median of {repeats}; baseline taken after imports, "
            "model, optimizer and batch creation. Each child imports only its own framework (and NumPy). The first "
            "step pays for what loads lazily: Ember's JIT (numba, with LLVM) loads then, PyTorch's kernel libraries "
            "at import (in its baseline); the absolute peak compares whole processes.")
    return Table("memory", "Peak memory (RSS)", [LIBS[lib] for lib in libs], results, unit="bytes", note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description="child mode of the peak-RSS benchmark")
    parser.add_argument("--lib", choices=sorted(LIBS), required=True)
    parser.add_argument("--row", choices=[row.key for row in ROWS], default=ROWS[0].key)
    parser.add_argument("--steps", type=int, help="default: the row's full-run steps")
    args = parser.parse_args()
    row = next(row for row in ROWS if row.key == args.row)
    print(json.dumps(child(args.lib, row, args.steps or row.steps)))


if __name__ == "__main__":
    main()
