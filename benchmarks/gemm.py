"""Dense float32 matrix multiply (n × n @ n × n) in GFLOP/s: Ember against NumPy and PyTorch.

Ember's CPU backend hands matmul to NumPy's BLAS, so NumPy is the floor it can reach and the gap
to it is Ember's own overhead; PyTorch shows what a different BLAS and threading achieve. On CUDA both
Ember (through CuPy) and PyTorch call cuBLAS, and the sizes go up to 4096 (TFLOP/s); there the
tensor-core forms are measured too: float32 with TF32 allowed (``set_float32_matmul_precision("high")``
on both sides, set around each call so that other cases keep full float32), float16 and bfloat16.
"""
from __future__ import annotations

import numpy as np

from gpu import GEMM_SIZES
from harness import Case, Section, Timing
from sides import Lineup

SIZES = (256, 1024, 2048)
TIMING = {True: Timing(rounds=3, budget_s=0.05, settle_s=0.15),
          False: Timing(rounds=9, budget_s=0.25, settle_s=0.15)}


#: the GPU's tensor-core forms: case suffix -> (label, dtype name or None for float32, float32 matmul precision)
TENSOR_CORE_FORMS = {"_tf32": ("float32, TF32 allowed", None, "high"), "_f16": ("float16", "float16", None),
                     "_bf16": ("bfloat16", "bfloat16", None)}


def _gemm(n: int, dtype: str | None = None, precision: str | None = None):
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))

    def build(sides):
        calls = []
        for side in sides:
            if side.is_numpy and (dtype or precision):
                calls.append(None)  # NumPy has no half-precision or TF32 GEMM
                continue
            x, y = side.tensor(a), side.tensor(b)
            if dtype:
                x, y = x.to(getattr(side.lib, dtype)), y.to(getattr(side.lib, dtype))
            calls.append(_with_precision(side.lib, precision, lambda x=x, y=y: x @ y) if precision else
                         (lambda x=x, y=y: x @ y))
        return calls, ""
    return build


def _with_precision(lib, precision: str, call):
    """``call`` run under ``lib.set_float32_matmul_precision(precision)``, the previous setting restored after."""
    def timed():
        before = lib.get_float32_matmul_precision()
        lib.set_float32_matmul_precision(precision)
        try:
            return call()
        finally:
            lib.set_float32_matmul_precision(before)
    return timed


def section(lineup: Lineup, quick: bool) -> Section:
    """On the CPU in GFLOP/s up to 2048; on a GPU in TFLOP/s up to 4096 (issue 6's GEMM target)."""
    gpu = lineup.device == "cuda"
    sizes, unit, scale = (GEMM_SIZES, "TFLOP/s", 1e12) if gpu else (SIZES, "GFLOP/s", 1e9)
    cases = [Case(f"gemm{n}", f"GEMM {n}×{n} float32", _gemm(n), work=2.0 * n ** 3) for n in sizes]
    if gpu:
        n = sizes[-1]
        cases += [Case(f"gemm{n}{suffix}", f"GEMM {n}×{n} {label}", _gemm(n, dtype, precision), work=2.0 * n ** 3)
                  for suffix, (label, dtype, precision) in TENSOR_CORE_FORMS.items()]
    return Section("gemm", "GEMM" if gpu else "GEMM float32", lineup.sides(lineup.numpy), cases, TIMING[quick],
                   unit=unit, scale=scale, note="2n³ FLOPs per call; ratio = Ember time / other time."
                   + (" TF32: float32 inputs, products on tensor cores with a 10-bit mantissa (PyTorch's "
                      "allow_tf32), on both sides." if gpu else ""))
