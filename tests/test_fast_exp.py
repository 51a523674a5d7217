"""The branch-free float32 exp (ember.dispatch.fast_exp): its accuracy against the correctly rounded exp over
a dense grid of float32 values and at the special ones, and its use by the CPU fusion hook (vectorized, no
libm call)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ember.backends.cpu import fusion as cpu_fusion
from ember.dispatch import dtypes as d
from ember.dispatch import fast_exp
from ember.dispatch.fast_exp import exp_float32
from ember.backends.codegen import OPENCL, render_c, render_python
from ember.dispatch.fusion import ElementwiseProgram, Step

#: the bound measured over every float32 in [-105, 105] (the grid below samples them; beyond, the
#: clamps give exactly 0 and inf)
MAX_ULP = 1


def _grid(stride: int) -> np.ndarray:
    """Every ``stride``-th float32 from 0 up to 105 by bit pattern (subnormals, tiny, all binades), and negated."""
    bits = np.arange(0, np.float32(105).view(np.int32), stride, dtype=np.int32)
    positive = bits.view(np.float32)
    return np.concatenate([positive, -positive])


def _ulp(x: np.ndarray, approx: np.ndarray) -> int:
    """The largest distance in float32 steps from the correctly rounded exp (subnormal results included)."""
    with np.errstate(over="ignore"):
        rounded = np.exp(x.astype(np.float64)).astype(np.float32)
    steps = [v.view(np.int32).astype(np.int64) for v in (approx, rounded)]  # exp is positive: ordered bits
    return int(np.abs(steps[0] - steps[1]).max())


def test_accuracy_over_a_dense_grid():
    x = _grid(509)  # about 4.4 million values
    assert _ulp(x, exp_float32(x)) <= MAX_ULP


#: the relative change of each Q coefficient the grid notices: higher powers of r matter less
_NOTICED = (1e-5, 1e-5, 1e-4, 1e-3, 1e-1)


@pytest.mark.parametrize("k", range(len(fast_exp.Q)))
def test_the_grid_notices_a_coefficient_off(monkeypatch, k):
    coefficients = list(fast_exp.Q)
    coefficients[k] *= 1 + _NOTICED[k]
    monkeypatch.setattr(fast_exp, "Q", tuple(coefficients))
    x = _grid(4093)
    assert _ulp(x, exp_float32(x)) > MAX_ULP


def test_the_coefficients_are_the_fit_and_the_ln2_split_is_exact():
    assert fast_exp.fit_q() == fast_exp.Q
    assert all(float(np.float32(c)) == c for c in fast_exp.Q)
    assert np.float32(fast_exp.LN2_HI).view(np.int32) & 0xFF == 0  # n·LN2_HI exact for |n| ≤ 256
    assert abs(fast_exp.LN2_HI + fast_exp.LN2_LO - math.log(2)) < 1e-13


def test_special_values():
    top = np.finfo(np.float32).max
    x = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229, 89.0, 1e30, top,
                    -87.3, -103.0, -103.9, -104.0, -1e30, -top, 1e-45, -1e-45, 1e-30])
    y = exp_float32(x)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert list(y[:4]) == [1, 1, np.inf, 0] and np.isnan(y[4])
    assert np.isfinite(y[5]) and list(y[6:10]) == [np.inf] * 4
    assert 0 < y[11] < np.finfo(np.float32).tiny  # a subnormal result, not flushed to zero
    assert list(y[13:16]) == [0, 0, 0] and list(y[16:]) == [1, 1, 1]
    finite = np.isfinite(x)
    assert _ulp(x[finite], y[finite]) <= MAX_ULP
    assert exp_float32(np.float32(0.5)).shape == () and exp_float32(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_scalar_source_matches_the_numpy_evaluation_bitwise():
    namespace = {"np": np}
    exec(fast_exp.python_source("exp32"), namespace)
    x = np.concatenate([_grid(1 << 15), np.float32([np.inf, -np.inf, np.nan, 1e30, -1e30])])
    with np.errstate(over="ignore"):
        scalar = np.array([namespace["exp32"](v) for v in x], np.float32)
    np.testing.assert_array_equal(scalar.view(np.int32), exp_float32(x).view(np.int32))


def _program(dt, shape=(4, 1000), op="exp"):
    return ElementwiseProgram(((shape, dt),), (Step(op, (("input", 0),), (), dt, dt),), (0,), shape)


@pytest.mark.parametrize("dt", [d.float32, d.float16, d.bfloat16])
def test_renderers_use_it_for_float32_and_halves_only_in_python(dt):
    for op in ("exp", "sigmoid"):
        source = render_python(_program(dt, op=op))
        assert "element_exp(" in source and "np.exp" not in source
    assert "exp(" in render_c(_program(dt), OPENCL)  # the device's exp
    double = render_python(_program(d.float64))
    assert "np.exp" in double and "element_exp" not in double


def test_fused_cpu_kernels_compute_it_vectorized():
    pytest.importorskip("numba")
    x = np.concatenate([_grid(1 << 14), np.float32([np.inf, -np.inf, np.nan, -0.0])])
    program = _program(d.float32, x.shape)
    (fused,) = cpu_fusion.fuse_elementwise(program)(x)
    np.testing.assert_array_equal(fused.view(np.int32), exp_float32(x).view(np.int32))
    (double,) = cpu_fusion.fuse_elementwise(_program(d.float64, x.shape))(x.astype(np.float64))
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(double, np.exp(x.astype(np.float64)), rtol=1e-15)  # libm's, not fast_exp's
    import numba
    kernel = cpu_fusion.load_source(cpu_fusion.kernel_source(program)).kernel
    fresh = numba.njit(error_model="numpy")(kernel.py_func)  # compiled here: a cached kernel keeps no assembly
    fresh(x, np.empty_like(x))
    (asm,) = fresh.inspect_asm().values()
    assert not re.search(r"\bexpf?\b", asm)  # libm's (numba loads its address: movabsq $expf, ...)
    assert re.search(r"\bv?(mul|add)ps\b", asm)  # packed single-precision arithmetic


def test_fused_reductions_of_it():
    pytest.importorskip("numba")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5, 33)).astype(np.float32) * 4
    top = x.max(-1, keepdims=True)
    f32 = d.float32
    steps = (Step("sub", (("input", 0), ("input", 1)), (1,), f32, f32), Step("exp", (("step", 0),), (), f32, f32))
    for dims in ((2,), (0, 2), (0, 1, 2)):
        program = ElementwiseProgram(((x.shape, f32), (top.shape, f32)), steps, (1,), x.shape, ("sum", dims, False))
        (total,) = cpu_fusion.fuse_elementwise(program)(x, top)
        expected = exp_float32(x - top).astype(np.float64).sum(axis=dims)
        np.testing.assert_allclose(total, expected, rtol=1e-6)
