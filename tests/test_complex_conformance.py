"""The conformance suite's complex machinery: drawing complex samples, comparing complex values, the Wirtinger
gradient check, the promotion table, and the parity report against PyTorch (``scripts/complex_parity.py``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.autograd import Function
from ember.conformance import wirtinger
from ember.conformance.compare import mismatch, tolerance
from ember.conformance.make import SPECIAL_COMPLEX, SPECIAL_FLOATS, Maker
from ember.conformance.samples import COMPLEX_DECLARED_SAMPLES, fixed_samples
from ember.conformance.target import resolve
from ember.dispatch import OPS

CPU = resolve("cpu")


def _make(dtype, seed: int = 0) -> Maker:
    return Maker(CPU, dtype, seed)


# -- make -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.complex64, ember.complex128], ids=lambda d: d.name)
def test_make_draws_both_parts_in_range(dtype):
    t = _make(dtype)((50,), low=0, high=2)
    values = t.numpy()
    assert t.dtype is dtype and values.dtype == np.dtype(dtype.name)
    for part in (values.real, values.imag):
        assert part.min() >= 0 and part.max() < 2 and part.std() > 0.1, "each part is drawn from [low, high)"
    assert np.all(np.abs(_make(dtype)((), nonzero=True).numpy()) >= 1e-3)


def test_complex_specials_put_nan_and_infinities_in_either_part():
    t = _make(ember.complex64).specials((3, 4))
    values = t.numpy().reshape(-1)
    assert t.dtype is ember.complex64 and len(SPECIAL_COMPLEX) == len(SPECIAL_FLOATS) == values.size
    assert np.isnan(values.real).any() and np.isnan(values.imag).any()
    assert np.isinf(values.real).any() and np.isinf(values.imag).any()
    assert any(v.real == 0 and math.copysign(1, v.imag) < 0 for v in values), "a -0.0 imaginary part (branch cut)"


# -- the lean complex samples -------------------------------------------------------------------------------

def test_complex_samples_are_lean_but_cover_broadcasting_layout_and_specials():
    op = OPS["add"]
    real = fixed_samples(op, _make(ember.float32), ember.float32)
    lean = fixed_samples(op, _make(ember.complex64), ember.complex64)
    # the op's first declared samples, one broadcasting shape set, one non-contiguous, the specials
    assert len(lean) <= COMPLEX_DECLARED_SAMPLES + 3 < len(real)
    notes = " ".join(s.note for s in lean)
    assert "non-contiguous" in notes and "special values" in notes
    assert all(t.dtype is ember.complex64 for s in lean for t in s.args if hasattr(t, "_data"))


def test_complex_reduction_samples_reduce_once_per_layout():
    lean = fixed_samples(OPS["sum"], _make(ember.complex128), ember.complex128)
    assert 2 <= len(lean) <= 4 and any("non-contiguous" in s.note for s in lean)


# -- comparing complex values ------------------------------------------------------------------------------

def test_complex_tolerance_is_the_component_dtypes():
    op = OPS["add"]
    assert tolerance(op, ember.complex64) == tolerance(op, ember.float32)
    assert tolerance(op, ember.complex128) == tolerance(op, ember.float64)


def test_mismatch_compares_complex_values_not_just_real_parts():
    expected = np.array([1 + 2j, 3 - 1j])
    assert mismatch(expected.astype(np.complex64), expected, ember.complex64, 1e-5, 1e-5) is None
    wrong_imaginary = np.array([1 + 2j, 3 + 1j], np.complex64)
    assert "1 of 2 values differ" in mismatch(wrong_imaginary, expected, ember.complex64, 1e-5, 1e-5)


def test_mismatch_treats_complex_nan_as_torch_isclose_does():
    nan, inf = math.nan, math.inf
    expected = np.array([complex(nan, nan), complex(inf, 0.0)])
    either_part_nan = np.array([complex(nan, inf), complex(inf, 0.0)])
    assert mismatch(either_part_nan, expected, ember.complex128, 1e-10, 1e-10) is None
    infinity_lost = np.array([complex(nan, nan), complex(inf, nan)])
    assert mismatch(infinity_lost, expected, ember.complex128, 1e-10, 1e-10) is not None


# -- the Wirtinger gradient check ---------------------------------------------------------------------------

class _TimesConstant(Function):
    """z * c with a backward that PyTorch's convention makes ``grad * conj(c)``; ``conjugate=False`` is the
    classic mistake (the holomorphic derivative without the conjugate)."""

    @staticmethod
    def forward(ctx, z, c, conjugate):
        ctx.c, ctx.conjugate = c, conjugate
        return z * c

    @staticmethod
    def backward(ctx, grad):
        return grad * (ctx.c.conj() if ctx.conjugate else ctx.c), None, None


def _inputs(shape=(3,)):
    rng = np.random.default_rng(1)
    z = ember.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), dtype=ember.complex128,
                     requires_grad=True)
    c = ember.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), dtype=ember.complex128)
    return z, c


@pytest.mark.parametrize("fast_mode", [False, True], ids=["full", "fast"])
def test_wirtinger_check_accepts_the_conjugate_derivative(fast_mode):
    z, c = _inputs()
    wirtinger.check(lambda x: (_TimesConstant.apply(x, c, True),), [z], np.random.default_rng(0),
                    fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True], ids=["full", "fast"])
def test_wirtinger_check_catches_a_missing_conjugate(fast_mode):
    z, c = _inputs()
    with pytest.raises(AssertionError, match="central differences|Wirtinger"):
        wirtinger.check(lambda x: (_TimesConstant.apply(x, c, False),), [z], np.random.default_rng(0),
                        fast_mode=fast_mode)


def test_wirtinger_check_covers_real_outputs_of_complex_inputs():
    z, _ = _inputs((4,))
    wirtinger.check(lambda x: (ember.abs(x),), [z], np.random.default_rng(0))
    assert wirtinger.involves_complex(lambda x: (ember.abs(x),), [z])
    real = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    assert not wirtinger.involves_complex(lambda x: (x * 2,), [real])


def test_wirtinger_second_order_check_runs_through_the_vjp():
    z, c = _inputs()
    wirtinger.check_second_order(lambda x: (x * x * c,), [z], np.random.default_rng(0))


# -- the promotion table --------------------------------------------------------------------------------------

def test_promotion_table_is_pytorchs():
    torch = pytest.importorskip("torch")
    from ember.conformance.test_promotion import EXPECTED
    names = [d.name for d in ember.dispatch.ALL_DTYPES]
    assert len(EXPECTED) == len(names) ** 2
    for a in names:
        for b in names:
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).removeprefix("torch.")
            assert EXPECTED[a, b] == want, (a, b)


# -- the parity report ---------------------------------------------------------------------------------------

def test_parity_errors_are_normwise_and_see_misplaced_specials():
    from ember.conformance.complex_parity import errors
    found = errors(np.array([1 + 1j, 10 + 0j]), np.array([1 + 1j, 10 + 0.5j]))
    assert found.absolute == pytest.approx(0.5) and found.relative == pytest.approx(0.5 / abs(10 + 0.5j))
    assert found.within(0.1, 0.0) and not found.within(1e-3, 1e-3) and found.specials_match
    assert not errors(np.array([complex(math.inf, 0)]), np.array([complex(math.inf, math.nan)])).specials_match


def test_parity_report_on_cpu():
    pytest.importorskip("torch")
    from ember.conformance.complex_parity import parity_rows, summary, table
    rows = parity_rows("cpu", ["mul", "exp", "sum", "abs", "fft_fft"])
    by_key = {(r.op, r.dtype): r for r in rows}
    assert {("mul", "complex64"), ("mul", "complex128"), ("fft_fft", "float64"), ("abs", "complex64")} <= set(by_key)
    failures = [line for line in table(rows) if "FAIL" in line]
    assert not failures, "\n".join(failures)
    for row in rows:
        assert row.samples > 0 and row.value_rel < 1e-4
        assert row.grad_rel is not None and row.grad_rel < 1e-4, f"{row.op} {row.dtype}: gradients compared"
    assert summary(rows).startswith(f"complex parity: {len(rows)} of {len(rows)} op x dtype pairs pass (5 ops)")


def test_parity_report_accepts_a_refusal_on_both_sides():
    pytest.importorskip("torch")
    from ember.conformance.complex_parity import Row, compare_sample
    from ember.dispatch.schema import Sample
    z = _make(ember.complex64)((2, 3))
    row = Row("clamp_min", "complex64")
    # torch.clamp_min refuses complex and so does ember: nothing to compare, nothing wrong
    compare_sample(OPS["clamp_min"], Sample((z, 0.5), {}), ember.complex64, row, np.random.default_rng(0), True)
    assert row.samples == 0 and not row.problems, row.problems


# -- how lean the complex cases are under the quick profile --------------------------------------------------

def test_quick_profile_samples_complex128_on_the_reference_backends_only(pytestconfig, monkeypatch):
    from ember.conformance import profiles
    monkeypatch.delenv(profiles.ENV_VAR, raising=False)
    if profiles.requested(pytestconfig) not in (None, "quick"):
        pytest.skip("this run asks for another hypothesis profile")
    assert ember.complex128 in profiles.sampled_dtypes(pytestconfig, CPU, CPU.dtypes)
    opencl = resolve("opencl")
    if not opencl.available or ember.complex128 not in opencl.dtypes:
        pytest.skip(f"no opencl device with complex128 here: {opencl.reason}")
    sampled = profiles.sampled_dtypes(pytestconfig, opencl, opencl.dtypes)
    assert ember.complex64 in sampled and ember.complex128 not in sampled and ember.float64 in sampled
    monkeypatch.setenv(profiles.ENV_VAR, "thorough")
    assert ember.complex128 in profiles.sampled_dtypes(pytestconfig, opencl, opencl.dtypes)
