"""Eager and fused results agree bit for bit: every op with a scalar formula, on float32, on cpu and opencl; and
composites are their formula computed over ``F`` (``ember.dispatch.formula_composite``) unless listed.

The eager result is the op called through Ember (the backend's kernel, or the op's composite run op by op); the
fused one is what ``ember.compile`` asks of the backend for a call of the op: its ``fuse_elementwise`` hook
running the op's one-step program (built by ``ember.conformance.fused.one_step``, as the conformance suite's
fusion test builds it). The inputs are the op's conformance samples, the special floats (NaN, infinities,
signed zeros) and 4096 seeded values over a wide range, where rounding differences show. NaNs compare equal
to NaNs (their sign and payload carry nothing); every other value must have the same bits.

``DIFFERS`` lists the ops whose eager kernel computes differently from the formula on a backend, with the most
ulps apart they may be and the reason.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.conformance.checks import on_device
from ember.conformance.fused import Declined, NotAProgram, one_step, run
from ember.conformance.make import Maker, Unsupported
from ember.conformance.samples import fixed_samples
from ember.conformance.target import resolve
from ember.dispatch import OPS, DispatchMode
from ember.dispatch.formula_composite import HAND_COMPOSITES, derived_from_formula
from ember.dispatch.schema import REQUIRED, Sample

AVAILABLE = ember.backends.available()
BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(AVAILABLE.get(name) != "available",
                                                         reason=f"{name} {AVAILABLE.get(name)}"))
            for name in ("cpu", "opencl")]
FORMULA_OPS = sorted(name for name, op in OPS.items() if op.scalar is not None)

#: (backend, op) -> (how many ulps its eager and fused float32 results may be apart, why). The fused CPU kernels
#: are numba code (libm, and ember.dispatch.fast_exp's and fast_erf's float32 forms); eager ones are NumPy's and
#: SciPy's, whose float32 exp, log and power are vectorized implementations of their own.
DIFFERS: dict[tuple[str, str], tuple[int, str]] = {
    ("cpu", "exp"): (4, "NumPy's vectorized float32 exp; fused: fast_exp's form"),
    ("cpu", "log"): (4, "NumPy's vectorized float32 log; fused: libm's logf"),
    ("cpu", "log2"): (4, "NumPy's log2; fused: the formula's log(x) / ln 2"),
    ("cpu", "log10"): (4, "NumPy's log10; fused: the formula's log(x) / ln 10"),
    ("cpu", "pow"): (4, "NumPy's float32 power; fused: libm's powf"),
    ("cpu", "erf"): (8, "SciPy's erf; fused: fast_erf's form (within 7 ulp of erf)"),
    ("cpu", "sigmoid"): (4, "SciPy's expit; fused: the formula's 1 / (1 + exp(-x)) with fast_exp's form"),
    ("cpu", "silu"): (4, "the CPU kernel's x / (1 + exp(-x)) with NumPy's exp; fused: with fast_exp's form"),
    ("cpu", "sign"): (1, "NumPy's sign(-0.0) is +0.0; the formula's input * 0 keeps the sign of -0.0, as the "
                         "OpenCL kernel does"),
    ("opencl", "silu"): (2, "the composite's x * sigmoid(x) op by op (formula_composite.HAND_COMPOSITES)"),
    ("opencl", "gelu_backward"): (128, "the composite op by op, x * (exp(-x^2/2) * c) where the formula has "
                                       "(x * exp(-x^2/2)) * c (formula_composite.HAND_COMPOSITES); the sum "
                                       "cancels for x << 0, where results near 1e-17 keep few digits"),
}


def _extra_samples(op, make) -> list:
    """Special floats and a wide seeded range for each tensor input, the attributes at their defaults."""
    if any(op.params[i].default is REQUIRED for i in op.attr_positions):
        return []
    tensors = [op.params[i] for i in op.tensor_positions]
    if any(p.type not in ("Tensor", "Index") for p in tensors):
        return []
    count = len(tensors)

    def wide(k: int, p):
        keywords = {"low": -10.0, "high": 10.0, **op.domain.get(p.name, {})}
        return make((4096,), **keywords)

    def special(k: int, p):  # input k varies along dim k: every pair of special values meets
        shape = tuple(12 if d == k else 1 for d in range(count))
        if p.type != "Tensor" or p.name in op.domain:
            return make(shape, **op.domain.get(p.name, {}))
        return make.specials(shape)

    return [Sample(tuple(wide(k, p) for k, p in enumerate(tensors)), note="wide"),
            Sample(tuple(special(k, p) for k, p in enumerate(tensors)), note="special values")]


def _ulps(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """How many representable values apart the two are, elementwise (0 for NaN against NaN; bools and integers
    count 1 where they differ). Signed zeros are one apart, so a zero of the wrong sign shows."""
    if actual.dtype.kind != "f":
        return (actual != expected).astype(np.int64)
    bits = actual.dtype.itemsize * 8

    def ordered(x):  # the floats' bit patterns as integers in the order of the floats
        i = x.view(f"i{bits // 8}").astype(np.int64)
        return np.where(i < 0, -(i & ((1 << (bits - 1)) - 1)) - 1, i)
    both_nan = np.isnan(actual) & np.isnan(expected)
    return np.where(both_nan, 0, np.abs(ordered(actual) - ordered(expected)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", FORMULA_OPS)
def test_eager_and_fused_agree(backend, name):
    op, target = OPS[name], resolve(backend)
    allowed = DIFFERS.get((backend, name), (0, ""))[0]
    make = Maker(target, ember.float32, seed=0)
    compared, declined, mismatches = 0, 0, []
    for sample in fixed_samples(op, make, ember.float32) + _extra_samples(op, make):
        try:
            program, tensors, expected = one_step(op, on_device(op, sample, target.device), target)
            (actual,) = run(target, program, tensors)
        except (NotAProgram, Unsupported):
            continue  # refused, other dtypes, or attributes without a formula: nothing the compiler would fuse
        except Declined:
            declined += 1  # the compiler runs it op by op: the eager kernels themselves
            continue
        if any(dt is not ember.float32 for dt in program.dtypes() if dt.is_floating_point):
            continue
        expected = np.ascontiguousarray(expected.detach().cpu().numpy())
        ulps = _ulps(np.ascontiguousarray(actual), expected)
        compared += 1
        if ulps.max(initial=0) > allowed:
            where = np.flatnonzero(ulps.reshape(-1) > allowed)[:3]
            shown = [np.broadcast_to(t.detach().cpu().numpy(), program.shape).reshape(-1)[where].tolist()
                     for t in tensors]
            mismatches.append(f"{sample.note or 'sample'} {program.steps[0].attrs}: {(ulps > allowed).sum()} of "
                              f"{ulps.size} over {allowed} ulp, e.g. at inputs {shown}: eager "
                              f"{expected.reshape(-1)[where].tolist()}, fused {actual.reshape(-1)[where].tolist()}")
    if not compared:
        pytest.skip(f"{backend} fuses no float32 sample of {name} ({declined} declined: compiled runs it op by op)")
    assert not mismatches, f"{name} on {backend}:\n" + "\n".join(mismatches)


# -- composites derived from the formula ---------------------------------------------------------------------

class _Calls(DispatchMode):
    """Records the ops called (not the ops they decompose into)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.op.name)
        return func(*args, **(kwargs or {}))


def _calls(function, *args) -> tuple[list[str], object]:
    with _Calls() as mode:
        result = function(*args)
    return mode.names, result


def test_every_composite_with_a_formula_is_the_formula_or_says_why_not():
    with_both = {name for name, op in OPS.items() if op.scalar is not None and op.composite is not None}
    derived = {name for name in with_both if derived_from_formula(OPS[name])}
    assert with_both - derived == set(HAND_COMPOSITES), "HAND_COMPOSITES must list exactly the hand-written ones"
    assert all(reason for reason in HAND_COMPOSITES.values())
    assert {"gelu", "relu", "lerp", "threshold_backward", "logaddexp"} <= derived


def test_a_derived_composite_makes_its_formulas_calls():
    x = ember.tensor([-4.0, -1.0, 0.0, 2.0, 5.0])
    names, result = _calls(OPS["hardswish"].composite, x)
    assert names == ["lt", "le", "add", "mul", "div", "where", "where"]
    np.testing.assert_array_equal(result.numpy(), np.array([0.0, -1 / 3, 0.0, 10 / 6, 5.0], np.float32))
    names, _ = _calls(OPS["threshold_backward"].composite, x, x, 0.0)
    assert names == ["gt", "mul"]


def test_a_derived_composite_computes_a_subexpression_once_and_a_number_condition_one_branch():
    x, end, weight = ember.zeros(3), ember.ones(3), ember.tensor([0.25, 0.5, 0.75])
    names, result = _calls(OPS["lerp"].composite, x, end, weight)
    assert sorted(names) == sorted(["lt", "sub", "mul", "add", "sub", "mul", "sub", "where"])  # end - input once
    np.testing.assert_array_equal(result.numpy(), weight.numpy())
    for w, expected in ((0.25, ["sub", "mul", "add"]), (0.75, ["sub", "mul", "sub"])):
        names, result = _calls(OPS["lerp"].composite, x, end, w)
        assert names == expected  # weight < 0.5 is decided in Python: one side only
        np.testing.assert_allclose(result.numpy(), w)


def test_a_derived_composite_is_differentiated_through_its_calls():
    x = ember.tensor([-2.0, -0.5, 0.5, 2.0], requires_grad=True)
    ember.nn.functional.leaky_relu(x, 0.25).sum().backward()  # no derivative of its own: the composite records
    np.testing.assert_array_equal(x.grad.numpy(), np.array([0.25, 0.25, 1.0, 1.0], np.float32))
