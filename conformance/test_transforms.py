"""The function transforms on every op (``ember.func``), from the op's own samples.

- ``test_jvp[op-float64]``: forward-mode AD (the op's ``jvp`` rule: a family, a formula, derived from its
  derivative, or its decomposition) against reverse mode, ``<J t, u> = <t, Jᵀ u>``, and against central
  differences; on a backend without float64, against reverse mode in float32.
- ``test_vmap[op-dtype]``: vmap of the op (its ``batch`` rule, its decomposition, or the per-element loop)
  against a Python loop, batching every operand, the first only, and along the last dim.

Under the ``quick`` profile (CI) each op's first and last samples are checked (the first batched one way only);
``thorough`` checks every sample every way.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember
from ember.conformance import profiles
from ember.conformance.cases import accepts, target_dtypes
from ember.conformance.gradients import finite_differences_apply, gradient_cases, is_gradient_op
from ember.conformance.plugin import count
from ember.conformance.samples import fixed_samples
from ember.conformance.transforms import check_jvp, check_vmap
from ember.dispatch import builtin_ops


def _vmap_dtype(op, dtypes):
    """The dtype the op is batched in: the widest floating dtype it takes, else its first."""
    for dt in (ember.float64, ember.float32, ember.int64, ember.bool):
        if dt in dtypes and accepts(op, dt, dtypes):
            return dt
    return None


def pytest_generate_tests(metafunc) -> None:
    dtypes = target_dtypes(metafunc.config)
    if metafunc.definition.name == "test_jvp":
        dt = ember.float64 if ember.float64 in dtypes else ember.float32
        params = [pytest.param(op, dt, id=f"{op.name}-{dt.name}") for op in builtin_ops()
                  if is_gradient_op(op) and accepts(op, dt, dtypes)]
    else:
        params = [pytest.param(op, dt, id=f"{op.name}-{dt.name}") for op in builtin_ops()
                  if op.tensor_positions and op.category != "random" and (dt := _vmap_dtype(op, dtypes)) is not None]
    metafunc.parametrize("op,dtype", params)


def _rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def test_jvp(op, dtype, make, backend, request):
    rng = _rng(request)
    cases = profiles.transform_samples(request.config, [
        case for case in gradient_cases(op, make, dtype, fixed_samples(op, make, dtype))
        if finite_differences_apply(case)])
    if not cases:
        pytest.skip(f"{op.name}: no {dtype.name} sample can be differentiated here")
    ran = 0
    for case in cases:
        if check_jvp(case, rng, finite_differences=dtype is ember.float64):
            ran += 1
            count(request.config, "forward-mode AD checks (against reverse mode"
                                  f"{' and central differences' if dtype is ember.float64 else ''})")
    if not ran:
        pytest.skip(f"{op.name}: {backend.name} refuses it on views, which dual tensors are")


def test_vmap(op, dtype, make, backend, request):
    rng = _rng(request)
    samples = fixed_samples(op, make, dtype)
    chosen = profiles.transform_samples(request.config, samples)
    ran = sum(check_vmap(op, sample, rng, every_batching=i == len(chosen) - 1 or len(chosen) == len(samples))
              for i, sample in enumerate(chosen))
    if not ran:
        pytest.skip(f"{op.name}: no sample whose elements a loop can stack")
    count(request.config, "vmap checks (against a loop)")
