"""TF32 for float32 GEMMs, as ``ember.set_float32_matmul_precision`` and ``ember.backends.cuda.matmul.allow_tf32``
ask.

CuPy keeps its own compute type per GEMM dtype (read once from ``CUPY_TF32``); cuBLAS then uses tensor cores for
float32 products only when it is TF32. This module sets it from Ember's flag when the backend starts with a
non-default setting and again whenever the flag changes, so a float32 matmul pays nothing per call. "high" and
"medium" both allow TF32, as PyTorch's CUDA matmuls do; "highest" is full float32 (CuPy's default type).
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import FLAGS, watch_flags


def compute_type_name(precision: str) -> str:
    """CuPy's compute-type constant for float32 GEMMs under Ember's ``float32_matmul_precision``."""
    return "COMPUTE_TYPE_DEFAULT" if precision == "highest" else "COMPUTE_TYPE_TF32"


def follow_matmul_precision(cupy) -> None:
    """Keep CuPy's float32 GEMM compute type in step with ``FLAGS.float32_matmul_precision`` from now on."""
    from cupy._core import _routines_linalg as linalg

    def apply(precision: str) -> None:
        linalg.set_compute_type(np.float32, getattr(linalg, compute_type_name(precision)))

    if FLAGS.float32_matmul_precision != "highest":  # else keep whatever CUPY_TF32 chose
        apply(FLAGS.float32_matmul_precision)
    watch_flags(lambda name, value: apply(value) if name == "float32_matmul_precision" else None)
