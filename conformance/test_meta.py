"""Every op on every dtype: output dtypes, shapes and storage; refused dtypes raise a DtypeError."""
from __future__ import annotations

import pytest

from ember import DtypeError
from ember.conformance.cases import op_dtype_params
from ember.conformance.checks import Unsupported, call, check_meta, on_device
from ember.conformance.samples import fixed_samples


def pytest_generate_tests(metafunc) -> None:
    accepted = metafunc.definition.name == "test_meta"
    metafunc.parametrize("op,dtype", op_dtype_params(metafunc.config, accepted=accepted))


def test_meta(op, dtype, make, backend):
    """Dtype by the promotion rule, shape by the meta function, on the device, views sharing storage."""
    samples = fixed_samples(op, make, dtype)
    if not samples:
        pytest.skip(f"{op.name} declares no samples for {dtype.name}")
    checked = 0
    for sample in samples:
        try:
            checked += check_meta(op, on_device(op, sample, backend.device), backend)
        except Unsupported:
            pass
    if not checked:
        pytest.skip(f"no sample of {op.name} runs on {dtype.name} here")


def test_rejects_dtype(op, dtype, make, backend):
    """A dtype the op does not accept (or the backend cannot compute in) is refused, naming the op (complex
    dtypes too: ``test_errors.test_complex_refused`` checks PyTorch's wording where PyTorch refuses)."""
    samples = fixed_samples(op, make, dtype)
    if not samples:
        pytest.skip(f"{op.name} declares no samples for {dtype.name}")
    for sample in samples:
        with pytest.raises(DtypeError, match=op.name):
            call(op, on_device(op, sample, backend.device))
