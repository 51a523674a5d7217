"""The CPU's numba layer norm (backends/cpu/row_kernels.py) against the shared NumPy kernel it replaces."""
from __future__ import annotations

import numpy as np
import pytest

from ember.backends.arraykernels import build_kernels
from ember.backends.cpu import row_kernels
from ember.backends.cpu.dtypes import NUMPY_DTYPE
from ember.backends.cpu.library import NUMPY
from ember.dispatch import dtypes as d

pytest.importorskip("numba")
NUMPY_KERNELS = build_kernels(NUMPY)
ROWS = row_kernels.build(NUMPY_KERNELS)
RNG = np.random.default_rng(0)
TOLERANCE = {d.float16: 1e-2, d.bfloat16: 4e-2, d.float32: 1e-5, d.float64: 1e-12}


@pytest.mark.parametrize("dtype", [d.float32, d.float64, d.float16, d.bfloat16], ids=lambda dt: dt.name)
@pytest.mark.parametrize("shape, normalized, affine", [
    ((1024, 128), (128,), (True, True)), ((64, 32, 48), (48,), (True, True)), ((2, 3, 4), (3, 4), (True, False)),
    ((5,), (5,), (False, True)), ((4, 6), (6,), (False, False)), ((3, 1), (1,), (True, True))])
def test_layer_norm_matches_the_numpy_kernel(dtype, shape, normalized, affine):
    x = (RNG.standard_normal(shape) * 3 + 1).astype(NUMPY_DTYPE[dtype])
    w, b = ((RNG.standard_normal(normalized).astype(NUMPY_DTYPE[dtype]) if on else None) for on in affine)
    expected = NUMPY_KERNELS["layer_norm"](x, normalized, w, b, 1e-5)
    actual = ROWS["layer_norm"](x, normalized, w, b, 1e-5)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=tol)


def test_layer_norm_non_contiguous_nan_and_empty():
    x = RNG.standard_normal((8, 12)).astype(np.float32)[:, ::2]
    x[3, 2], x[5, 0] = np.nan, np.inf
    actual, expected = (k["layer_norm"](x, (6,), None, None, 0.1) for k in (ROWS, NUMPY_KERNELS))
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)  # NaN where NumPy has NaN
    assert np.isnan(actual[3]).all() and np.isnan(actual[5]).all()
    empty = np.zeros((0, 4), np.float32)
    assert ROWS["layer_norm"](empty, (4,), None, None, 1e-5).shape == (0, 4)


def test_the_cpu_backend_uses_it():
    from ember.backends.cpu.kernels import KERNELS
    assert KERNELS["layer_norm"].__qualname__.startswith("_layer_norms.")
    assert KERNELS["layer_norm"].__module__ == row_kernels.__name__
