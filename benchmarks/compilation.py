"""OpenCL kernel compilation: what first use costs, with and without the on-disk caches, and
that a kernel is never compiled twice in a process.

Each measurement is a fresh process (a compiled-program cache lives in the process) that runs
MLP training steps on opencl and reports, from the backend's memory_stats, how many programs the
first step compiled and how long compiling took, then the same for the second step. "Cold"
disables PoCL's and PyOpenCL's on-disk caches, so every kernel goes through the compiler; "warm"
leaves them on after a cold run has filled them.

    python benchmarks/compilation.py --child      (child mode: prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Callable

from harness import Result, Table

COLD = {"POCL_KERNEL_CACHE": "0", "PYOPENCL_NO_CACHE": "1"}


def child() -> dict:
    import ember

    from sides import Side
    from training import WORKLOADS, new_model, training_step

    side = Side("Ember", "ember", device="opencl")
    mlp = next(w for w in WORKLOADS if w.key == "mlp")
    step = training_step(side, mlp, new_model(side, mlp))
    stats = ember.backends.registered()["opencl"].memory_stats
    out = {}
    for name in ("first", "second"):
        before = stats(0)
        began = time.perf_counter()
        step()
        side.sync()
        after = stats(0)
        out[name] = {"seconds": time.perf_counter() - began,
                     "compiled": after["compiled_kernels"] - before["compiled_kernels"],
                     "compile_seconds": (after["compile_seconds_x1000"] - before["compile_seconds_x1000"]) / 1000}
    return out


def _spawn(extra_env: dict) -> dict:
    env = dict(os.environ, **extra_env)
    done = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--child"], capture_output=True,
                          text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"compile benchmark child exited with {done.returncode}: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(progress: Callable[[str], None] = lambda line: None) -> Table:
    progress("opencl: kernel compilation, cold disk caches")
    cold = _spawn(COLD)
    progress("opencl: kernel compilation, warm disk caches")
    warm = _spawn({})
    results = []
    for step, label in (("first", "first MLP step"), ("second", "second MLP step")):
        note = (f"cold: {cold[step]['compiled']} programs compiled in {cold[step]['compile_seconds']:.2f} s; "
                f"warm: {warm[step]['compiled']} programs in {warm[step]['compile_seconds']:.2f} s")
        results.append(Result(f"compile_{step}", label, {"cold caches": cold[step]["seconds"],
                                                         "warm disk cache": warm[step]["seconds"]},
                              "cold caches", "warm disk cache", note=note))
    return Table("compile", "OpenCL kernel compilation (fresh processes)", ["cold caches", "warm disk cache"],
                 results, note="Step time including compilation. A second step compiles nothing: "
                               "programs are cached per process by source.", pairs=[])


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true")
    if parser.parse_args().child:
        print(json.dumps(child()))
    else:
        print(json.dumps({"cold": _spawn(COLD), "warm": _spawn({})}))
