"""Choosing the CPU's row kernels: the shared NumPy kernels vs numba row loops.

The row loops are the CPU backend's (backends/cpu/row_loops.py, softmax_loops.py, registered by
row_kernels.py): layer norm and its backward, softmax and log-softmax with their backward ops, and
cross-entropy over class indices (forward and backward, its softmax and log-sum-exp in a loop). For
softmax and log-softmax a third contender is timed: the same loop calling numba's own ``np.exp`` (a scalar
libm call), which lost to NumPy and is why the loops use ember.dispatch.fast_exp's vectorizable exp.

Shapes are the benchmark workloads': layer norm over (16·64, 128) for the encoder and (64·32, 48) for the
GPT (with weight and bias), softmax and log-softmax over the last dim of (16·4, 64, 64) and (64·3, 32, 32)
attention scores, cross-entropy over the GPT's (64·32, 65) logits and a classifier's (64, 10). All float32.
Each side is called as the CPU backend calls its kernels (NumPy arrays in, new arrays out). Each (kernel,
shape, side) reports the median and the spread (min to max) of the per-call time over rounds; the numba
side also its first call in a fresh process with an empty numba cache (compiling) and with the cache that
process left (loading): what a training program's first step pays.

    python benchmarks/row_kernels_choice.py [--rounds 15] [--calls 20]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

NORMS, ATTENTION, LOGITS = [(1024, 128), (2048, 48)], [(64, 64, 64), (192, 32, 32)], [(2048, 65), (64, 10)]
CASES = ([("layer_norm", s) for s in NORMS] + [("layer_norm_backward", s) for s in NORMS]
         + [(name, s) for name in ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward")
            for s in ATTENTION]
         + [(name, s) for name in ("cross_entropy_indices", "cross_entropy_indices_backward") for s in LOGITS])
LIBM = "numba with libm's exp"


def kernels():
    """(NumPy kernels, the CPU's row kernels, the libm-exp softmax loops) by op name; the last two {} without
    numba."""
    from ember.backends.arraykernels import build_kernels
    from ember.backends.cpu import row_kernels
    from ember.backends.cpu.library import NUMPY
    numpy_kernels = build_kernels(NUMPY)
    rows = row_kernels.build(numpy_kernels)
    libm = {name: over_last_dim(numpy_kernels, name) for name in ("softmax", "log_softmax")} if rows else {}
    return numpy_kernels, rows, libm


def over_last_dim(numpy_kernels: dict, name: str):
    """A libm-exp softmax contender called as the backend would call it: float32 rows over the last dim."""
    from ember.backends.cpu.row_kernels import _rows
    loop = _softmax_loops()[name]

    def kernel(a, dim, dtype=None):
        if a.size == 0 or a.ndim == 0 or dim % a.ndim != a.ndim - 1:
            return numpy_kernels[name](a, dim, dtype)
        rows = _rows(a, a.shape[-1])
        out = np.empty_like(rows)
        loop(rows, out)
        return out.reshape(a.shape).astype(a.dtype, copy=False)
    return kernel


def _softmax_loops() -> dict:
    import math

    from numba import njit

    @njit(error_model="numpy")
    def row_max(x, r):
        """The largest value of row ``r``; NaN if the row holds one (as NumPy's max)."""
        top = x[r, 0]
        for j in range(1, x.shape[1]):
            v = x[r, j]
            if v > top or v != v:
                top = v
        return top

    @njit(error_model="numpy", fastmath={"reassoc"})
    def softmax(x, out):
        """``out[r] = exp(x[r] - max) / sum(exp(x[r] - max))``."""
        rows, n = x.shape
        for r in range(rows):
            top = row_max(x, r)
            total = 0.0
            for j in range(n):
                e = np.exp(x[r, j] - top)
                out[r, j] = e
                total += e
            scale = out.dtype.type(total)
            for j in range(n):
                out[r, j] = out[r, j] / scale

    @njit(error_model="numpy", fastmath={"reassoc"})
    def log_softmax(x, out):
        """``out[r] = (x[r] - max) - log(sum(exp(x[r] - max)))``, rounded in that order as NumPy's kernel does."""
        rows, n = x.shape
        for r in range(rows):
            top = row_max(x, r)
            total = 0.0
            for j in range(n):
                total += np.exp(x[r, j] - top)
            lse = x.dtype.type(math.log(total))
            for j in range(n):
                out[r, j] = (x[r, j] - top) - lse

    return {"softmax": softmax, "log_softmax": log_softmax}


def call_of(table: dict, name: str, shape: tuple, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    grad = rng.standard_normal(shape).astype(np.float32)
    if name.startswith("layer_norm"):
        w, b = (rng.standard_normal(shape[-1:]).astype(np.float32) for _ in range(2))
        if name == "layer_norm":
            return lambda: table[name](x, shape[-1:], w, b, 1e-5)
        return lambda: table[name](grad, x, shape[-1:], w, 1e-5)
    if name.startswith("cross_entropy"):
        target = rng.integers(0, shape[1], shape[0])
        if name == "cross_entropy_indices":
            return lambda: table[name](x, target, None, -100, 0.0, "mean")
        return lambda: table[name](np.float32(1.0), x, target, None, -100, 0.0, "mean")
    if name.endswith("_backward"):  # from the forward's output, as autograd calls it
        y = table[name.removesuffix("_backward")](x, len(shape) - 1, None)
        return lambda: table[name](grad, y, len(shape) - 1)
    return lambda: table[name](x, len(shape) - 1, None)


def per_call_ms(call, rounds: int, calls: int) -> list[float]:
    call()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls * 1e3)
    return times


def first_call_ms(cache: str) -> str:
    """A fresh process's first call of every row kernel (each case), with numba's and Ember's kernel caches
    in ``cache``."""
    script = ("import time, numpy as np, sys; sys.path.insert(0, %r); import row_kernels_choice as b; "
              "rng = np.random.default_rng(0); _, rows, _ = b.kernels(); "
              "calls = [b.call_of(rows, n, s, rng) for n, s in b.CASES]; start = time.perf_counter(); "
              "[call() for call in calls]; print((time.perf_counter() - start) * 1e3)"
              % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, EMBER_CACHE_DIR=cache)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return f"{float(done.stdout):.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    numpy_kernels, rows, libm = kernels()
    if not rows:
        sys.exit("numba is not installed: nothing to compare")
    rng = np.random.default_rng(0)
    print(f"{'kernel':<31} {'shape':<14} {'NumPy ms (min-max)':<22} {'numba ms (min-max)':<22} speed-up  "
          f"{LIBM} (speed-up)")
    for name, shape in CASES:
        tables = [numpy_kernels, rows] + ([libm] if name in libm else [])
        sides = [per_call_ms(call_of(table, name, shape, rng), args.rounds, args.calls) for table in tables]
        medians = [statistics.median(t) for t in sides]
        cells = [f"{m:.3f} ({min(t):.3f}-{max(t):.3f})" for m, t in zip(medians, sides)]
        extra = f"  {cells[2]} ({medians[0] / medians[2]:.1f}x)" if len(cells) > 2 else ""
        print(f"{name:<31} {str(shape):<14} {cells[0]:<22} {cells[1]:<22} {medians[0] / medians[1]:.1f}x{extra}")
    cache = tempfile.mkdtemp(prefix="ember-numba-")
    try:
        print(f"first calls of every row kernel in a fresh process: compiling {first_call_ms(cache)}, "
              f"loading from numba's cache {first_call_ms(cache)}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
