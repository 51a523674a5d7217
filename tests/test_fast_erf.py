"""The branch-free float32 erf (ember.dispatch.fast_erf): its accuracy against math.erf over a dense grid of
float32 values and at the special ones, and its use by the CPU fusion hook and the CPU erf/gelu kernels."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.backends.cpu import fusion as cpu_fusion
from ember.backends.cpu import library as cpu_library
from ember.dispatch import dtypes as d
from ember.dispatch import fast_erf
from ember.dispatch.fast_erf import erf_float32
from ember.backends.codegen import OPENCL, render_c, render_python
from ember.dispatch.fusion import ElementwiseProgram, Step

#: the bounds measured over every float32 (the grid below samples them)
MAX_ULP = 7
MAX_ABS = 3.93e-7
_math_erf = np.frompyfunc(math.erf, 1, 1)


def _grid(stride: int) -> np.ndarray:
    """Every ``stride``-th float32 from 0 up to 4.5 by bit pattern (subnormals, tiny, all binades), and negated."""
    bits = np.arange(0, np.float32(4.5).view(np.int32), stride, dtype=np.int32)
    positive = bits.view(np.float32)
    return np.concatenate([positive, -positive])


def _errors(x: np.ndarray, approx: np.ndarray) -> tuple[int, float]:
    """(the largest distance in float32 steps from the correctly rounded erf, the largest absolute error)."""
    exact = _math_erf(x.astype(np.float64)).astype(np.float64)
    rounded = exact.astype(np.float32)
    # float32 bit patterns ordered as integers (negative values mirrored), so their difference counts steps

    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return int(np.abs(ordered(approx) - ordered(rounded)).max()), float(np.abs(approx - exact).max())


def test_accuracy_over_a_dense_grid():
    x = _grid(509)  # about 2.1 million values
    ulp, absolute = _errors(x, erf_float32(x))
    assert ulp <= MAX_ULP and absolute <= MAX_ABS, (ulp, absolute)


@pytest.mark.parametrize("which, k", [("P", k) for k in range(len(fast_erf.P))]
                         + [("Q", k) for k in range(1, len(fast_erf.Q))])  # (Q[0] = 1 is exact)
def test_the_grid_notices_a_coefficient_off_by_one_part_in_ten_thousand(monkeypatch, which, k):
    coefficients = list(getattr(fast_erf, which))
    coefficients[k] *= 1 + 1e-4
    monkeypatch.setattr(fast_erf, which, tuple(coefficients))
    x = _grid(5003)
    assert _errors(x, erf_float32(x))[0] > MAX_ULP


def test_special_values():
    f = np.float32
    tiny = np.float32([1e-45, 1e-40, 1e-38, 1e-30, 1e-10]).astype(np.float32)
    x = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, 3.95, 1e30, -1e30, np.finfo(np.float32).max],
                        tiny, -tiny]).astype(np.float32)
    y = erf_float32(x)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert y[0] == 0 and not np.signbit(y[0]) and y[1] == 0 and np.signbit(y[1])
    assert y[2] == 1 and y[3] == -1 and np.isnan(y[4])
    assert list(y[5:10]) == [f(1), f(1), f(1), f(-1), f(1)]
    assert _errors(x[10:], y[10:])[0] <= 1  # erf(x) = 2x/sqrt(pi) down to the subnormals
    assert erf_float32(np.float32(0.5)).shape == () and erf_float32(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_odd_and_bounded():
    x = _grid(4099)
    y = erf_float32(x)
    half = len(x) // 2
    np.testing.assert_array_equal(y[half:], -y[:half])
    assert np.abs(y).max() <= 1


def test_scalar_source_matches_the_numpy_evaluation_bitwise():
    namespace = {"np": np}
    exec(fast_erf.python_source("erf32"), namespace)
    x = np.concatenate([_grid(1 << 16), np.float32([np.inf, -np.inf, np.nan, 1e30])])
    scalar = np.array([namespace["erf32"](v) for v in x], np.float32)
    np.testing.assert_array_equal(scalar.view(np.int32), erf_float32(x).view(np.int32))


def _erf_program(dt, shape=(4, 1000), op="erf", attrs=()):
    return ElementwiseProgram(((shape, dt),), (Step(op, (("input", 0),), attrs, dt, dt),), (0,), shape)


@pytest.mark.parametrize("dt", [d.float32, d.float16, d.bfloat16])
def test_renderers_use_it_for_float32_and_halves_only_in_python(dt):
    program = _erf_program(dt)
    assert "element_erf(" in render_python(program) and "math.erf" not in render_python(program)
    assert "erf(" in render_c(program, OPENCL)  # the device's erf
    double = _erf_program(d.float64)
    assert "math.erf" in render_python(double) and "element_erf" not in render_python(double)


def test_fused_cpu_kernels_compute_it():
    pytest.importorskip("numba")
    x = np.concatenate([_grid(1 << 14), np.float32([np.inf, -np.inf, np.nan, -0.0])])
    (fused,) = cpu_fusion.fuse_elementwise(_erf_program(d.float32, x.shape))(x)
    np.testing.assert_array_equal(fused.view(np.int32), erf_float32(x).view(np.int32))
    (double,) = cpu_fusion.fuse_elementwise(_erf_program(d.float64, x.shape))(x.astype(np.float64))
    np.testing.assert_array_equal(double, _math_erf(x.astype(np.float64)).astype(np.float64))  # libm's
    (gelu,) = cpu_fusion.fuse_elementwise(_erf_program(d.float32, x.shape, "gelu", ("none",)))(x)
    finite = np.isfinite(x)
    exact = x.astype(np.float64) * 0.5 * (1 + _math_erf(x.astype(np.float64) / math.sqrt(2)).astype(np.float64))
    np.testing.assert_allclose(gelu[finite], exact[finite], rtol=1e-6, atol=2e-6)


def test_cpu_erf_and_gelu_kernels_use_it_for_large_float32_tensors():
    large = np.random.default_rng(0).standard_normal(cpu_library.FAST_ERF_MIN_SIZE).astype(np.float32) * 3
    np.testing.assert_array_equal(ember.erf(ember.tensor(large)).numpy(), erf_float32(large))
    small = large[:100]
    np.testing.assert_array_equal(ember.erf(ember.tensor(small)).numpy(), _math_erf(small).astype(np.float32))
    gelu = ember.nn.functional.gelu(ember.tensor(large)).numpy()
    expected = large * np.float32(0.5) * (erf_float32(large * np.float32(1 / np.sqrt(2))) + np.float32(1))
    np.testing.assert_array_equal(gelu, expected)
    assert ember.erf(ember.tensor(large.astype(np.float64))).numpy().dtype == np.float64
