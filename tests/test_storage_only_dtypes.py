"""Storage-only dtypes (``Backend.storage_only_dtypes``): kernel calls that read or make one compute in float32.

CUDA declares bfloat16 so, because CuPy 14 stores it but lacks bfloat16 loops for ``where``, sorts, scatter-add
and Python-float operands (108 conformance failures on the H200). The logic is the dispatcher's, so the CPU
checks it: the whole bfloat16 conformance runs with the cpu backend declaring bfloat16 storage-only.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.dispatch import OPS, bfloat16, clear_plans, float32, registry
from ember.dispatch.execution.storage_dtypes import through_float32

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def storage_only_cpu():
    backend = registry.get_backend("cpu")
    backend.storage_only_dtypes = lambda index: frozenset({bfloat16})
    clear_plans()
    yield backend
    del backend.storage_only_dtypes
    clear_plans()


def test_the_bfloat16_conformance_passes_with_bfloat16_storage_only():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "storage_only_plugin", "-p", "no:cacheprovider", "-q",
                          "--pyargs", "ember.conformance", "--backend", "cpu", "-k", "bfloat16"],
                         env=env, capture_output=True, text=True, timeout=1800)
    tail = "\n".join(run.stdout.splitlines()[-30:])
    assert run.returncode == 0, f"bfloat16 conformance with bfloat16 storage-only failed:\n{tail}\n{run.stderr[-2000:]}"
    assert " passed" in tail


def test_kernels_see_float32_and_results_come_back_bfloat16(storage_only_cpu):
    seen = []
    kernels = storage_only_cpu.kernels
    original = kernels["where"]

    def spy(*args):
        seen.extend(getattr(a, "dtype", None) for a in args)
        return original(*args)
    kernels["where"] = spy
    try:
        a = ember.tensor([1.0, 2.0, 3.0], dtype=ember.bfloat16)
        out = ember.where(a > 1.5, a, a * 0.5)
    finally:
        kernels["where"] = original
    assert out.dtype is ember.bfloat16
    assert np.dtype(np.float32) in seen and np.dtype("bfloat16") not in seen
    np.testing.assert_array_equal(out.float().numpy(), [0.5, 2.0, 3.0])


def test_a_python_float_rounds_once_in_float32(storage_only_cpu):
    a = ember.tensor([1.0, 3.0], dtype=ember.bfloat16)
    out = a * 1.00390625  # 1 + 2**-8: bfloat16 would round it to 1; float32 opmath keeps it until the result rounds
    assert out.dtype is ember.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), [1.0, 3.015625])  # 3.01171875 rounded once


def test_views_writes_and_casts_keep_the_stored_dtype():
    cast = OPS["to_dtype"]
    kernel = lambda *a: a  # noqa: E731
    storage = frozenset({bfloat16})
    x = ember.zeros(2, dtype=ember.bfloat16)
    for name in ("view", "copy_", "to_dtype"):
        op = OPS[name]
        assert op.view or op.mutates or op is cast
        assert through_float32(op, kernel, [x] * len(op.params), bfloat16, bfloat16, storage, None) is None
    assert through_float32(OPS["add"], kernel, [x, x, 1], bfloat16, bfloat16, frozenset(), None) is None
    y = ember.zeros(2)
    assert through_float32(OPS["add"], kernel, [y, y, 1], float32, float32, storage, None) is None
