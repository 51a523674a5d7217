"""Peak resident memory of the MLP training loop, each framework in a fresh process of its own.

Peak RSS is a process-wide high-water mark, so the two frameworks cannot share a process: PyTorch's
import alone would set the mark for both. Each child imports one framework, builds the MLP, its
optimizer and batch, records the peak so far (the baseline), runs the loop, and records it again.
The target compares the growth (peak minus baseline): the memory the loop itself needs. The
absolute peak, which includes each framework's import, is reported beside it. The child builds the
model with its own framework's initialisation, which does not change how much memory the loop takes.

On Linux the peak is read from VmHWM in /proc/self/status rather than from ru_maxrss: the kernel
carries ru_maxrss over exec, so a child of this (large) benchmark process would report its parent's
peak. VmHWM is the same high-water mark kept per address space, which exec starts afresh.

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


def child(lib_name: str, steps: int) -> dict[str, int]:
    """Run the MLP loop in this process and return its baseline and peak RSS in bytes."""
    from sides import Side
    from training import WORKLOADS, new_model, training_step

    side = Side(LIBS[lib_name], lib_name)
    mlp = next(w for w in WORKLOADS if w.key == "mlp")
    step = training_step(side, mlp, new_model(side, mlp))
    baseline = peak_rss_bytes()
    for _ in range(steps):
        step()
    return {"baseline": baseline, "peak": peak_rss_bytes()}


def _spawn(lib_name: str, steps: int) -> dict[str, int]:
    script = pathlib.Path(__file__).resolve()
    out = subprocess.run([sys.executable, str(script), "--lib", lib_name, "--steps", str(steps)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{LIBS[lib_name]} child exited with {out.returncode}: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(with_torch: bool, quick: bool, progress: Callable[[str], None] = lambda line: None) -> Table:
    """Interleaved fresh-process runs (Ember, PyTorch, Ember, ...); medians of growth and of peak."""
    steps, repeats = STEPS[quick], REPEATS[quick]
    libs = ["ember", "torch"] if with_torch else ["ember"]
    reference = "PyTorch" if with_torch else None
    growth = Result("rss_growth", f"MLP loop, {steps} steps: peak RSS − baseline", {}, "Ember", reference, target=1.2)
    peak = Result("rss_peak", f"MLP loop, {steps} steps: absolute peak RSS", {}, "Ember", reference)
    runs: dict[str, list[dict[str, int]]] = {lib: [] for lib in libs}
    try:
        for i in range(repeats):
            for lib in libs:
                progress(f"Peak memory: {LIBS[lib]} child {i + 1}/{repeats}, {steps} MLP steps")
                runs[lib].append(_spawn(lib, steps))
    except RuntimeError as exc:  # a broken child must not cost the rest of the report
        progress(f"  failed: {exc}")
        growth.note = peak.note = f"failed: {exc}"
    else:
        for lib, rs in runs.items():
            growth.values[LIBS[lib]] = statistics.median(r["peak"] - r["baseline"] for r in rs)
            peak.values[LIBS[lib]] = statistics.median(r["peak"] for r in rs)
    note = (f"Peak RSS (VmHWM) of a fresh process per run, median of {repeats}; baseline taken after imports, "
            "model, optimizer and batch creation. Each child imports only its own framework (and NumPy).")
    return Table("memory", "Peak memory (RSS)", [LIBS[lib] for lib in libs], [growth, peak], unit="bytes", note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description="child mode of the peak-RSS benchmark")
    parser.add_argument("--lib", choices=sorted(LIBS), required=True)
    parser.add_argument("--steps", type=int, default=STEPS[False])
    args = parser.parse_args()
    print(json.dumps(child(args.lib, args.steps)))


if __name__ == "__main__":
    main()
