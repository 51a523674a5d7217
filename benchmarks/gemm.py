"""Dense float32 matrix multiply (n × n @ n × n) in GFLOP/s: Ember against NumPy and PyTorch.

Ember's CPU backend hands matmul to NumPy's BLAS, so NumPy is the floor it can reach and the gap
to it is Ember's own overhead; PyTorch shows what a different BLAS and threading achieve. On CUDA both
Ember (through CuPy) and PyTorch call cuBLAS, and the sizes go up to 4096 (TFLOP/s).
"""
from __future__ import annotations

import numpy as np

from gpu import GEMM_SIZES
from harness import Case, Section, Timing
from sides import Lineup

SIZES = (256, 1024, 2048)
TIMING = {True: Timing(rounds=3, budget_s=0.05, settle_s=0.15),
          False: Timing(rounds=9, budget_s=0.25, settle_s=0.15)}


def _gemm(n: int):
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))

    def build(sides):
        calls = []
        for side in sides:
            x, y = side.tensor(a), side.tensor(b)
            calls.append(lambda x=x, y=y: x @ y)
        return calls, ""
    return build


def section(lineup: Lineup, quick: bool) -> Section:
    """On the CPU in GFLOP/s up to 2048; on a GPU in TFLOP/s up to 4096 (issue 6's GEMM target)."""
    gpu = lineup.device == "cuda"
    sizes, unit, scale = (GEMM_SIZES, "TFLOP/s", 1e12) if gpu else (SIZES, "GFLOP/s", 1e9)
    cases = [Case(f"gemm{n}", f"GEMM {n}×{n} float32", _gemm(n), work=2.0 * n ** 3) for n in sizes]
    return Section("gemm", "GEMM float32", lineup.sides(lineup.numpy), cases, TIMING[quick],
                   unit=unit, scale=scale, note="2n³ FLOPs per call; ratio = Ember time / other time.")
