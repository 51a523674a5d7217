"""What ``ember.compile`` costs on first use: capture, build and kernel compilation of a whole training step.

For each training workload, a fresh process builds the model and its step, wraps the step in
``ember.compile`` and times the first call until its result is ready, with ``EMBER_CACHE_DIR`` set to a
new, empty directory; a second fresh process does the same with that directory, now warm. An eager
first step pays for lazy work too (imports, kernel caches, optimizer state), so a third fresh process
times the first step without compiling, and the difference is what compiling adds. The fastest of a
few later compiled calls gives a step in steady state, for scale (the fastest, since on a shared
machine single calls are easily slowed by other processes). Only Ember's cache directory is made cold:
on opencl, PoCL's and PyOpenCL's own disk caches stay as they are (compilation.py measures those), so
kernels the eager process built may be found there by the compiled ones.

    python benchmarks/compile_time.py [--device cpu] [--models mlp,cnn,transformer,gpt]
    python benchmarks/compile_time.py --child MODEL --device cpu [--eager]   (one process; prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Callable

from harness import Result, Table

MODELS = ["mlp", "cnn", "transformer", "gpt"]
LATER_CALLS = 8
EAGER, COLD, WARM, STEADY = "eager first step", "empty cache", "warm cache", "steady compiled step"
LABELS = [EAGER, COLD, WARM, STEADY]


def child(model_key: str, device: str, compiled: bool) -> dict[str, float]:
    """In this process: seconds of the first call of the step (compiled or not) and the fastest later call."""
    from sides import Side
    from training import FLOAT32_WORKLOADS, new_model, training_step

    side = Side("Ember", "ember", device, compiled=compiled)
    workload = next(w for w in FLOAT32_WORKLOADS if w.key == model_key)
    step = training_step(side, workload, new_model(side, workload))
    if compiled:
        step = side.lib.compile(step)
    seconds = []
    for _ in range(1 + LATER_CALLS):
        began = time.perf_counter()
        step()
        side.sync()
        seconds.append(time.perf_counter() - began)
    return {"first": seconds[0], "fastest_later": min(seconds[1:])}


def _spawn(model_key: str, device: str, cache: pathlib.Path, compiled: bool = True) -> dict[str, float]:
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--child", model_key,
                           "--device", device] + ([] if compiled else ["--eager"]), capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the {model_key} process exited with {done.returncode}: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(model_key: str, name: str, device: str) -> Result:
    """One model: an eager process, a compiled one with an empty kernel cache directory, one with it warm."""
    with tempfile.TemporaryDirectory(prefix="ember-compile-cache-") as cache:
        try:
            eager = _spawn(model_key, device, pathlib.Path(cache), compiled=False)
            cold = _spawn(model_key, device, pathlib.Path(cache))
            warm = _spawn(model_key, device, pathlib.Path(cache))
        except RuntimeError as exc:
            return Result(model_key, name, {}, COLD, EAGER, note=f"failed: {exc}")
    values = {EAGER: eager["first"], COLD: cold["first"], WARM: warm["first"],
              STEADY: min(cold["fastest_later"], warm["fastest_later"])}
    return Result(model_key, name, values, COLD, EAGER)


def table(device: str = "cpu", models: list[str] = MODELS,
          progress: Callable[[str], None] = lambda line: None) -> Table:
    from training import FLOAT32_WORKLOADS

    names = {w.key: w.name for w in FLOAT32_WORKLOADS}
    results = []
    for key in models:
        progress(f"{device}: first call of ember.compile(step), {key}")
        results.append(measure(key, names[key], device))
    return Table("compile_time", f"ember.compile: first call of a compiled training step ({device}, fresh processes)",
                 LABELS, results, pairs=[(COLD, EAGER), (WARM, EAGER), (WARM, COLD)],
                 note="Seconds from the first call of the step to its result, each in a fresh process: eager (no "
                      "compile), then ember.compile(step) with EMBER_CACHE_DIR a new empty directory (capture, "
                      "build, kernel compilation and one step's work), then again with the directory the previous "
                      f"process filled. 'steady compiled step': the fastest of the next {LATER_CALLS} compiled "
                      "calls, for scale.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", type=lambda s: s.split(","), default=MODELS, metavar="KEYS",
                        help=f"comma-separated, of {','.join(MODELS)}")
    parser.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    parser.add_argument("--eager", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = set(args.models) - set(MODELS)
    if unknown:
        parser.error(f"unknown model(s) {', '.join(sorted(unknown))}; choose from {', '.join(MODELS)}")
    if args.child:
        print(json.dumps(child(args.child, args.device, compiled=not args.eager)))
        return
    from machine import load_average
    from report import render_table

    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    before = load_average()
    lines = render_table(table(args.device, args.models, say))
    print("\n".join(lines + [f"Load average (1, 5, 15 min): {before} at the start, {load_average()} at the end."]))


if __name__ == "__main__":
    main()
