"""Every differentiable op's gradients, on every floating dtype the backend supports and the op accepts.

- ``test_gradcheck[op-float64]``: first derivatives against central differences (``gradcheck``):
  the full Jacobian for small inputs, a random projection (fast mode) for bigger ones.
- ``test_gradgradcheck[op-float64]``: second derivatives (``gradgradcheck``, fast mode), for every op
  whose derivative is itself differentiable (``OpDef.second_order``).
- ``test_grad_dtype[op-float32]``: gradients of the other floating dtypes have the input's dtype and
  device, and match the CPU backend's float64 gradient of the same values within the dtype's tolerance.

On a backend without float64, finite differences are out of reach: the CPU float64 comparison is
then the check, of first derivatives for every floating dtype (``test_grad_dtype``) and of second
derivatives for float32 (``test_gradgradcheck[op-float32]``; half precision is too coarse for them).
The samples are the op's own (see ``gradients``).

Complex dtypes go with their components: complex128 is checked as float64 is, complex64 as float32 (against
the CPU's complex128). Where a complex tensor is among a case's inputs or outputs (fft of a float64 input,
abs of a complex one), the finite differences are ``wirtinger``'s, by PyTorch's convention.
"""
from __future__ import annotations

import zlib
from contextlib import contextmanager

import numpy as np
import pytest

import ember
from ember.autograd import GradcheckError, gradcheck, gradgradcheck
from ember.conformance import profiles, wirtinger
from ember.conformance.cases import accepts, sampled_dtypes, target_dtypes
from ember.conformance.gradients import (compare_gradients, finite_differences_apply, gradient_cases, is_gradient_op,
                                         is_small, reference_case)
from ember.conformance.plugin import count
from ember.conformance.samples import fixed_samples
from ember.dispatch import builtin_ops


def _tested_dtypes(test: str, dtypes) -> list:
    """The dtypes each test runs on (see above); complex128 goes with float64, complex64 with float32."""
    floating = [d for d in dtypes if d.is_inexact]
    if ember.float64 in dtypes:
        if test == "test_grad_dtype":
            return [d for d in floating if d.to_real() is not ember.float64]
        return [d for d in floating if d.to_real() is ember.float64]
    if test == "test_grad_dtype":
        return floating
    if test == "test_gradgradcheck":  # half precision is too coarse for second derivatives
        return [d for d in floating if d is ember.float32]
    return []  # finite differences need float64


def pytest_generate_tests(metafunc) -> None:
    dtypes = target_dtypes(metafunc.config)
    chosen = [d for d in _tested_dtypes(metafunc.definition.name, dtypes) if d in sampled_dtypes(metafunc.config)]
    metafunc.parametrize("op,dtype", [pytest.param(op, dt, id=f"{op.name}-{dt.name}")
                                      for op in builtin_ops() if is_gradient_op(op)
                                      for dt in chosen if accepts(op, dt, dtypes)])


def _cases(op, dtype, make, backend, config, finite_differences: bool = False) -> list:
    cases = gradient_cases(op, make, dtype, fixed_samples(op, make, dtype))
    if finite_differences:
        cases = [case for case in cases if finite_differences_apply(case)]
    if not cases and dtype.is_complex:  # the lean complex samples may all be refused or have no complex slope
        pytest.skip(f"{op.name}: none of its {dtype.name} samples can be differentiated (test_values checks them)")
    cases = profiles.gradient_samples(config, dtype, cases)
    assert cases, (f"{op.name}: no {dtype.name} sample can be differentiated on {backend.name} (every one has "
                   f"non-finite inputs or outputs, or no floating input); declare OpDef.grad_domain or samples")
    return cases


def _seed(request) -> int:
    return zlib.crc32(request.node.nodeid.encode())


@contextmanager
def _differentiating(case, what: str = ""):
    """Failures name the sample: a GradcheckError becomes a test failure, other errors say where they arose."""
    try:
        yield
    except GradcheckError as exc:
        raise AssertionError(f"{case.describe()}: {what}{exc}") from None
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"{case.describe()}: {what}{type(exc).__name__}: {exc}") from exc


def test_gradcheck(op, dtype, make, backend, request):
    rng = np.random.default_rng(_seed(request))
    for case in _cases(op, dtype, make, backend, request.config, finite_differences=True):
        ember.manual_seed(_seed(request))  # fast mode draws its projection from the default generator
        with _differentiating(case):
            if wirtinger.involves_complex(case, case.inputs):
                wirtinger.check(case, case.inputs, rng, fast_mode=not is_small(case), what=f"{case.describe()}: ")
            else:
                gradcheck(case, case.inputs, fast_mode=not is_small(case))
        count(request.config, "first-order gradient checks (finite differences)")


def test_gradgradcheck(op, dtype, make, backend, request):
    if not op.second_order:
        pytest.skip(f"{op.name} declares second_order=False: its derivative is not differentiable")
    rng = np.random.default_rng(_seed(request))
    finite_differences = dtype.to_real() is ember.float64
    for case in _cases(op, dtype, make, backend, request.config, finite_differences=finite_differences):
        with _differentiating(case, "second order: "):
            if finite_differences and wirtinger.involves_complex(case, case.inputs):
                wirtinger.check_second_order(case, case.inputs, rng, what=f"{case.describe()}: ")
            elif dtype is ember.float64:
                ember.manual_seed(_seed(request))
                gradgradcheck(case, case.inputs, fast_mode=True)
            else:
                compare_gradients(case, reference_case(case), rng, order=2)
        count(request.config, "second-order gradient checks "
                              f"({'finite differences' if finite_differences else 'against CPU float64'})")


def test_grad_dtype(op, dtype, make, backend, request):
    rng = np.random.default_rng(_seed(request))
    for case in _cases(op, dtype, make, backend, request.config):
        with _differentiating(case):
            compare_gradients(case, reference_case(case), rng)
        count(request.config, "first-order gradient checks (against CPU float64)")
