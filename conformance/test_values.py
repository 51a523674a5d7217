"""Every op with a NumPy reference, on every dtype it accepts: values, against the reference.

``test_values`` runs the op's fixed samples (declared, or the category defaults);
``test_values_generated`` lets hypothesis choose shapes (0-d, empty, broadcasting),
layouts and dims for elementwise ops and reductions.
"""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ember.conformance import profiles
from ember.conformance.cases import op_dtype_params, target_dtypes
from ember.conformance.checks import Unsupported, check_values, on_device
from ember.conformance.make import Maker
from ember.conformance.plugin import target_of
from ember.conformance.samples import draw_sample, fixed_samples, has_generated_samples


def pytest_generate_tests(metafunc) -> None:
    name = metafunc.definition.name
    if name == "test_values":
        cases = op_dtype_params(metafunc.config, where=lambda op: op.reference is not None)
    elif name == "test_composite_values":
        target = target_of(metafunc.config)
        cases = op_dtype_params(metafunc.config, where=lambda op: op.kind == "composite" and target.available
                                and op.reference is not None and op.name in target.impl.kernels)
    else:
        generated = profiles.generated_dtypes(metafunc.config, target_dtypes(metafunc.config))
        cases = [case for case in op_dtype_params(metafunc.config, where=has_generated_samples)
                 if case.values[1] in generated]
    metafunc.parametrize("op,dtype", cases)


def _check_fixed_samples(op, dtype, make, backend, composite=False) -> None:
    samples = fixed_samples(op, make, dtype)
    if not samples:
        pytest.skip(f"{op.name} declares no samples for {dtype.name}")
    compared = unsupported = 0
    for sample in samples:
        try:
            compared += check_values(op, on_device(op, sample, backend.device), backend, composite)
        except Unsupported:
            unsupported += 1
    if unsupported == len(samples):
        pytest.skip(f"every sample of {op.name} needs a dtype {backend.name} lacks")
    assert compared, f"{op.name}: every {dtype.name} sample was refused; no value was compared"


def test_values(op, dtype, make, backend):
    _check_fixed_samples(op, dtype, make, backend)


def test_composite_values(op, dtype, make, backend):
    """The core definition of a composite that this backend overrides: other backends run it."""
    _check_fixed_samples(op, dtype, make, backend, composite=True)


@given(data=st.data())
def test_values_generated(op, dtype, backend, data):
    make = Maker(backend, dtype, data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    try:
        check_values(op, on_device(op, draw_sample(data, op, make), backend.device), backend)
    except Unsupported:
        pytest.skip(f"{op.name} on {dtype.name} needs a dtype {backend.name} lacks")
