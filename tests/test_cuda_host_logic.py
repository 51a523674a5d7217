"""The CUDA backend's host-side logic, checked on the CPU: what the H200's first run found wrong, made to
fail here first (../shared/gpu-runs/2026-11-28-h200/diagnosis.md, classes 1-3).

Where CuPy is stricter than NumPy, the shared kernels run over ``CUPY_CONTRACT``: NumPy with CuPy 14's
documented preconditions enforced, so a kernel that relies on a NumPy leniency fails on the CPU as it
would on the GPU.
"""
from __future__ import annotations

import dataclasses
import io
import types

import numpy as np
import pytest

import ember
from ember.backends.arraykernels import decompositions
from ember.backends.cpu.library import NUMPY
from ember.backends.cuda.library import accumulating_dtype, bfloat16_dtype, scatter_adder
from ember.dispatch import c_contiguous


class _ContractLinalg:
    """``numpy.linalg`` with CuPy 14's ``solve`` precondition (cupy/linalg/_solve.py): a multidimensional
    ``b`` must have exactly ``a``'s batch dims, where NumPy 2 broadcasts them."""

    def __getattr__(self, name):
        return getattr(np.linalg, name)

    @staticmethod
    def solve(a, b):
        if b.ndim == a.ndim and a.shape[:-1] != b.shape[:-1]:
            raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) for multidimensional b")
        return np.linalg.solve(a, b)


class _CupyContract(types.ModuleType):
    """NumPy, except where CuPy 14 refuses what NumPy accepts."""

    linalg = _ContractLinalg()

    def __getattr__(self, name):
        return getattr(np, name)


CUPY_CONTRACT = _CupyContract("cupy_contract")


# -- class 1: 0-d arrays stay 0-d on their way to a device ------------------------------------------------

def test_c_contiguous_keeps_zero_dim_arrays():
    assert np.ascontiguousarray(np.array(2.5)).shape == (1,)  # the NumPy behaviour that broke uploads
    assert c_contiguous(np.array(2.5)).shape == ()
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    made = c_contiguous(strided, np.float32)
    assert made.flags.c_contiguous and made.shape == (3, 2) and made.dtype == np.float32
    np.testing.assert_array_equal(made, strided)
    already = np.zeros((2, 2))
    assert c_contiguous(already) is already


def test_assert_close_compares_zero_dim_shapes():
    with pytest.raises(AssertionError, match="shape"):
        ember.testing.assert_close(np.array([1.0]), np.array(1.0))
    ember.testing.assert_close(np.array(1.0), np.array(1.0))


def test_zero_dim_tensors_of_torch_checkpoints_load_zero_dim_on_other_devices():
    torch = pytest.importorskip("torch")
    if "opencl" not in ember.backends.available() or ember.backends.available()["opencl"] is not None:
        pytest.skip("no OpenCL device here")
    buffer = io.BytesIO()
    torch.save({"step": torch.tensor(3.0)}, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer, map_location="opencl")
    assert loaded["step"].shape == () and loaded["step"].item() == 3.0


# -- class 2: bfloat16 -------------------------------------------------------------------------------------

def test_scatter_add_of_bfloat16_accumulates_in_float32_not_int64():
    bf16 = np.dtype(bfloat16_dtype(np))
    assert accumulating_dtype(bf16) == np.float32
    assert accumulating_dtype(np.dtype(np.int8)) == np.int64 and accumulating_dtype(np.dtype(np.bool_)) == np.int64
    add_at = scatter_adder(types.SimpleNamespace(scatter_add=np.add.at))  # cupyx.scatter_add is np.add.at on the GPU
    target = np.zeros(3, bf16)
    add_at(target, np.array([0, 0, 2]), np.array([1.25, 0.5, -1.5], bf16))
    np.testing.assert_array_equal(target.astype(np.float32), [1.75, 0.0, -1.5])
    small = np.array([100, 0], np.int8)
    add_at(small, np.array([0, 0]), np.array([20, 20], np.int8))
    assert small[0] == np.int8(-116)  # wraps as adding in int8 would


def test_bfloat16_probe_accepts_a_library_that_holds_it():
    assert bfloat16_dtype(np) == np.dtype("bfloat16")


def test_bfloat16_probe_refuses_a_library_that_cannot_convert_it():
    broken = types.SimpleNamespace(asarray=lambda a: np.asarray(a).astype(np.float16), empty=np.empty)
    assert bfloat16_dtype(broken) is None  # float16 cannot hold 3.39e38: the round trip differs


# -- class 3: batched triangular solves over broadcast batch dims ------------------------------------------

@pytest.mark.parametrize("left", [True, False])
def test_triangular_solve_broadcasts_batches_before_cupys_solve(left):
    solve = decompositions.build(dataclasses.replace(NUMPY, xp=CUPY_CONTRACT))["linalg_solve_triangular"]
    rng = np.random.default_rng(0)
    a = np.tril(rng.standard_normal((1, 3, 3))) + 4 * np.eye(3)
    b = rng.standard_normal((2, 3, 4) if left else (2, 4, 3))
    x = solve(a, b, upper=False, left=left, unitriangular=False)
    assert x.shape == b.shape
    np.testing.assert_allclose(a @ x if left else x @ a, b, rtol=1e-10, atol=1e-10)


def test_the_contract_refuses_what_cupy_refuses():
    with pytest.raises(ValueError, match="multidimensional b"):
        CUPY_CONTRACT.linalg.solve(np.eye(3)[None], np.ones((2, 3, 1)))
