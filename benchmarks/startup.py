"""Startup: ``import`` of each framework and the first step of some workloads, each in a fresh process.

A user's first minutes with a framework are its import and its first steps, which pay for every lazy cost
(kernel compilation, caches, optimizer state); the timed sections hide those by warming up. Here each
(framework, workload) pair runs in a fresh process that imports only its framework: the import is timed
first, before anything else loads, then the workload is built (not timed) and its first call is timed.
Processes alternate between the frameworks, like the timed sections'.

    python benchmarks/startup.py --lib ember --case mlp        (child mode: prints one JSON line)
"""
from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Callable

LIBS = {"ember": "Ember", "torch": "PyTorch"}
CASES = ["mlp", "gpt", "lstm_lm", "char_mlp", "sample_1"]
REPEATS = {True: 1, False: 3}


def _first_call(lib_name: str, key: str) -> float:
    """Seconds of the first call of workload ``key`` (a training-step key or a program key), built beforehand."""
    from sides import Side
    side = Side(LIBS[lib_name], lib_name)
    import programs
    import training
    workloads = {w.key: w for w in training.WORKLOADS}
    if key in workloads:
        call = training.training_step(side, workloads[key], training.new_model(side, workloads[key]))
    else:
        call, _ = next(p for p in programs.PROGRAMS if p.key == key).build(side)
    start = time.perf_counter()
    call()
    side.sync()
    return time.perf_counter() - start


def child(lib_name: str, key: str) -> dict[str, float]:
    start = time.perf_counter()
    importlib.import_module(lib_name)
    imported = time.perf_counter() - start
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    return {"import": imported, "first": _first_call(lib_name, key)}


def _spawn(lib_name: str, key: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--lib", lib_name, "--case", key],
                         capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{LIBS[lib_name]} child for {key} exited with {out.returncode}: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(with_torch: bool, quick: bool, progress: Callable[[str], None] = lambda line: None):
    """Medians over fresh processes of the import time and of each case's first call."""
    from harness import Result, Table
    libs = ["ember", "torch"] if with_torch else ["ember"]
    reference = "PyTorch" if with_torch else None
    imports: dict[str, list[float]] = {lib: [] for lib in libs}
    firsts: dict[str, dict[str, list[float]]] = {key: {lib: [] for lib in libs} for key in CASES}
    notes = []
    for i in range(REPEATS[quick]):
        for key in CASES:
            for lib in libs:
                progress(f"Startup: {LIBS[lib]} {key} {i + 1}/{REPEATS[quick]}")
                try:
                    run = _spawn(lib, key)
                except RuntimeError as exc:  # a broken child costs its own row only
                    notes.append(str(exc))
                    continue
                imports[lib].append(run["import"])
                firsts[key][lib].append(run["first"])
    results = [Result("import", "import of the framework (fresh interpreter)",
                      {LIBS[lib]: statistics.median(ts) if ts else None for lib, ts in imports.items()},
                      "Ember", reference)]
    for key in CASES:
        results.append(Result(f"first_{key}", f"first call of {key} (after building it)",
                              {LIBS[lib]: statistics.median(ts) if ts else None for lib, ts in firsts[key].items()},
                              "Ember", reference))
    note = (f"Fresh process per framework and workload, median of {REPEATS[quick]}; the import is timed before "
            "anything else is imported; default threads. "
            + " ".join(notes))
    return Table("startup", "Startup: import and first step", [LIBS[lib] for lib in libs], results, note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description="child mode of the startup benchmark")
    parser.add_argument("--lib", choices=sorted(LIBS), required=True)
    parser.add_argument("--case", choices=CASES, required=True)
    args = parser.parse_args()
    print(json.dumps(child(args.lib, args.case)))


if __name__ == "__main__":
    main()
