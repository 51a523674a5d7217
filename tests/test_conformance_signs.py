"""The conformance suite compares eigen- and singular vectors up to their gauge (``OpDef.gauge``), and no further.

cuSOLVER returns SVD and eigh vectors with other signs than LAPACK (the H200 run of issue 32): both are right,
since A fixes a singular pair (u_i, v_i) only up to one sign for both, and an eigenvector up to its sign. Here
the cpu backend plays such a library: its float32 ``linalg_svd`` and ``linalg_eigh`` kernels are wrapped to
change their real results (float64 stays LAPACK's, as the CPU float64 reference of the gradient checks is).
Flips of whole pairs must pass the suite's value and gradient checks; a vector flipped without its partner,
vectors given to the wrong values, or a vector turned off its line must fail them.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.conformance.checks import call, check_values, output_mismatch
from ember.conformance.compare import mismatch
from ember.conformance.gauge import invariant_outputs
from ember.conformance.gradients import compare_gradients, gradient_cases, reference_case
from ember.conformance.make import Maker
from ember.conformance.oracle import host, outputs_of, run_reference
from ember.conformance.samples import fixed_samples
from ember.conformance.target import resolve
from ember.dispatch import OPS, clear_plans, registry
from ember.dispatch.schema import Gauge, OpDef

CPU = resolve("cpu")
# every op that declares a gauge (see test_the_gauged_ops)
VECTOR_OPS = ("linalg_svd", "svd", "linalg_eigh", "linalg_eig")


# -- changes a library could make to the vectors, applied to (array, axis) pairs, with k values -------------

def _take(x, axis: int, index):
    at = [slice(None)] * x.ndim
    at[axis] = index
    return tuple(at)


def flip_pairs(vectors, k):
    """Negate vectors 0, 2, 4, ... in every output: u_i with v_i, a gauge change."""
    for x, axis in vectors:
        x[_take(x, axis, slice(0, k, 2))] *= -1


def flip_first_alone(vectors, k):
    """Negate vectors 0, 2, ... of U only: A = U diag(S) Vh no longer holds."""
    x, axis = vectors[0]
    x[_take(x, axis, slice(0, k, 2))] *= -1


def swap(vectors, k):
    """Exchange vectors 0 and 1 in every output: each now belongs to the other's value."""
    for x, axis in vectors:
        first, second = x[_take(x, axis, 0)].copy(), x[_take(x, axis, 1)].copy()
        x[_take(x, axis, 0)], x[_take(x, axis, 1)] = second, first


def turn(vectors, k, angle: float = 0.05):
    """Turn vectors 0 and 1 into each other by ``angle``, alike in every output: a gauge change only where
    their values are equal, which the samples' are not."""
    c, s = np.cos(angle), np.sin(angle)
    for x, axis in vectors:
        first, second = x[_take(x, axis, 0)].copy(), x[_take(x, axis, 1)].copy()
        x[_take(x, axis, 0)], x[_take(x, axis, 1)] = c * first - s * second, s * first + c * second


def _changing(original, change, vectors_of):
    """``original`` kernel with ``change`` made to the vectors of its float32 results."""
    def kernel(a, *attrs):
        results = [np.array(r) for r in original(a, *attrs)]
        if a.dtype == np.float32:
            vectors, k = vectors_of(results)
            change(vectors, k)
        return tuple(results)
    return kernel


KERNEL_VECTORS = {  # (u, s, vh) and (values, vectors) as the kernels return them
    "linalg_svd": lambda r: ([(r[0], -1), (r[2], -2)], r[1].shape[-1]),
    "linalg_eigh": lambda r: ([(r[1], -1)], r[0].shape[-1]),
}


@pytest.fixture
def library(monkeypatch):
    """``library(change)``: the cpu backend's float32 SVD and eigh kernels give their results so changed."""
    kernels = registry.get_backend("cpu").kernels

    def install(change):
        for name, vectors_of in KERNEL_VECTORS.items():
            monkeypatch.setitem(kernels, name, _changing(kernels[name], change, vectors_of))
        clear_plans()  # plans made with the kernels would still run them
    yield install
    monkeypatch.undo()
    clear_plans()


def _samples(op, seed: int = 3):
    make = Maker(CPU, ember.float32, seed)
    return make, fixed_samples(op, make, ember.float32)


def _elementwise_problem(op, sample) -> str | None:
    """The first difference from the reference output by output, as the suite found it before gauges."""
    outputs = [host(t) for t in outputs_of(op, call(op, sample))]
    expected = run_reference(op, sample.args, sample.kwargs, ember.float32)
    problems = (mismatch(got, ref, ember.float32, 1e-5, 1e-5) for got, ref in zip(outputs, expected))
    return next((p for p in problems if p is not None), None)


# -- values -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", VECTOR_OPS)
def test_vectors_flipped_in_pairs_pass_the_value_check(library, name):
    op = OPS[name]
    library(flip_pairs)
    _, samples = _samples(op)
    assert any(_elementwise_problem(op, s) for s in samples), "the flips do not show: the test proves nothing"
    for sample in samples:
        assert check_values(op, sample, CPU)


@pytest.mark.parametrize("name,change", [
    ("linalg_svd", flip_first_alone), ("svd", flip_first_alone),
    ("linalg_svd", swap), ("svd", swap), ("linalg_eigh", swap),
    ("linalg_svd", turn), ("svd", turn), ("linalg_eigh", turn)], ids=lambda v: getattr(v, "__name__", v))
def test_wrong_vectors_fail_the_value_check(library, name, change):
    op = OPS[name]
    library(change)
    _, samples = _samples(op)
    with pytest.raises(AssertionError, match="aligned by the gauge"):
        check_values(op, samples[0], CPU)  # the first sample of each op has vectors


def _eigh_with_values(values, rng):
    """A symmetric matrix with the given eigenvalues and a random eigenbasis (float64)."""
    basis, _ = np.linalg.qr(rng.standard_normal((len(values), len(values))))
    return basis @ np.diag(values) @ basis.T


def _turned(x, columns, angle):
    """``x`` with two of its columns turned into each other by ``angle``."""
    out = x.copy()
    (i, j), c, s = columns, np.cos(angle), np.sin(angle)
    out[:, i], out[:, j] = c * x[:, i] - s * x[:, j], s * x[:, i] + c * x[:, j]
    return out


def _eigh_problem(a, change) -> str | None:
    """The suite's comparison of the cpu backend's eigh of ``a``, vectors changed, with NumPy's."""
    values, vectors = (host(t) for t in ember.linalg.eigh(ember.tensor(a)))
    expected = list(np.linalg.eigh(a))
    return output_mismatch(OPS["linalg_eigh"], [values, change(vectors)], expected, [ember.float64] * 2)


def test_repeated_eigenvalues_compare_their_space_not_their_basis():
    rng = np.random.default_rng(0)
    repeated, distinct = _eigh_with_values([1.0, 1.0, 3.0], rng), _eigh_with_values([1.0, 2.0, 3.0], rng)
    assert _eigh_problem(repeated, lambda v: _turned(v, (0, 1), 0.7)) is None
    assert _eigh_problem(distinct, lambda v: _turned(v, (0, 1), 0.7)) is not None
    assert _eigh_problem(repeated, lambda v: _turned(v, (1, 2), 0.7)) is not None  # across two values
    assert _eigh_problem(repeated, lambda v: v * np.array([1.0, 1.01, 1.0])) is not None  # not of unit length


def test_full_matrices_columns_past_the_values_compare_as_a_space():
    a = np.random.default_rng(1).standard_normal((4, 2))
    u, s, vh = (host(t) for t in ember.linalg.svd(ember.tensor(a), full_matrices=True))
    expected = list(np.linalg.svd(a, full_matrices=True))

    def problem(changed_u):
        return output_mismatch(OPS["linalg_svd"], [changed_u, s, vh], expected, [ember.float64] * 3)
    assert problem(_turned(u, (2, 3), 0.9)) is None  # another basis of what U's first two columns leave
    assert problem(u * np.array([1.0, 1.0, -1.0, 1.0])) is None
    assert problem(u * np.array([1.0, 1.0, 1.0, 1.01])) is not None
    assert problem(_turned(u, (1, 2), 0.9)) is not None  # a determined column mixed into the rest


# -- gradients ----------------------------------------------------------------------------------------------

def _gradient_cases(op):
    make, samples = _samples(op)
    cases = gradient_cases(op, make, ember.float32, samples)
    assert cases, f"{op.name}: no float32 sample can be differentiated"
    return cases


@pytest.mark.parametrize("name", VECTOR_OPS)
def test_gradients_of_vectors_flipped_in_pairs_match_the_cpu_float64_ones(library, name):
    op = OPS[name]
    library(flip_pairs)
    rng = np.random.default_rng(5)
    for case in _gradient_cases(op):
        compare_gradients(case, reference_case(case), rng)
        compare_gradients(case, reference_case(case), rng, order=2)


@pytest.mark.parametrize("name", ["linalg_svd", "svd"])
def test_gradients_see_a_singular_vector_flipped_without_its_partner(library, name):
    op = OPS[name]
    library(flip_first_alone)
    case = _gradient_cases(op)[0]
    with pytest.raises(AssertionError, match="differs from the CPU float64 gradient"):
        compare_gradients(case, reference_case(case), np.random.default_rng(5))


def _svd_outputs(flip):
    """linalg_svd's outputs of a fixed 4 x 3 matrix on the cpu backend, with ``flip`` applied to the vectors."""
    a = np.random.default_rng(2).standard_normal((4, 3))
    u, s, vh = (host(t) for t in ember.linalg.svd(ember.tensor(a), full_matrices=False))
    flip([(u, -1), (vh, -2)], 3)
    return [ember.tensor(x) for x in (u, s, vh)]


def test_invariant_outputs_see_pairs_flipped_together_as_unchanged():
    op = OPS["linalg_svd"]
    same = [host(t) for t in invariant_outputs(op, _svd_outputs(lambda vectors, k: None))]
    flipped = [host(t) for t in invariant_outputs(op, _svd_outputs(flip_pairs))]
    alone = [host(t) for t in invariant_outputs(op, _svd_outputs(flip_first_alone))]
    assert len(same) == 4  # S, U c U^T, V c V^T and the pairing U c Vh
    for original, changed in zip(same, flipped):
        np.testing.assert_allclose(changed, original, rtol=0, atol=1e-12)
    assert not np.allclose(alone[-1], same[-1], atol=1e-3)


# -- the declaration ----------------------------------------------------------------------------------------

def test_the_gauged_ops():
    """The tests above cover every op that declares a gauge: those returning eigen- or singular vectors (not
    eigvalsh or svdvals, which return values only)."""
    assert sorted(name for name, op in OPS.items() if op.gauge is not None) == sorted(VECTOR_OPS)


@pytest.mark.parametrize("gauge", [Gauge("S", (("W", -1),)), Gauge("T", (("U", -1),)), Gauge("S", (("U", 0),))])
def test_a_gauge_names_the_op_s_outputs_and_matrix_axes(gauge):
    with pytest.raises(ValueError, match="gauge"):
        OpDef(name="decomposition", params=(), category="linalg", kind="primitive", promotion=None, meta=None,
              outputs=("U", "S"), gauge=gauge)
