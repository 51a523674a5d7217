"""No op goes untested, and what the backend implements itself is on record."""
from __future__ import annotations

import pytest

from ember.conformance.cases import accepts, op_params
from ember.conformance.checks import Unsupported, expected_types, on_device
from ember.conformance.plugin import SUMMARY
from ember.conformance.samples import fixed_samples
from ember.dispatch import OPS, composites, primitives


def pytest_generate_tests(metafunc) -> None:
    if "op" in metafunc.fixturenames:
        metafunc.parametrize("op", op_params())


def test_op_has_samples(op, make, backend):
    """At least one sample of the op runs on this backend (declare ``samples=`` in its OpDef otherwise)."""
    dtypes = [d for d in backend.dtypes if accepts(op, d, backend.dtypes)]
    assert dtypes, f"{op.name} accepts none of {backend.name}'s dtypes"
    runnable = 0
    for dtype in dtypes:
        make.dtype = dtype
        for sample in fixed_samples(op, make, dtype):
            try:
                expected_types(op, on_device(op, sample, backend.device), backend)
                runnable += 1
            except Unsupported:
                pass
            except Exception:
                runnable += 1  # a sample the op must refuse still tests it (test_values checks the refusal)
    assert runnable, f"{op.name} has no sample that runs on {backend.name}: give its OpDef samples= (see schema.Sample)"


def test_backend_kernels(backend, request):
    """Every primitive has a kernel (those declared ``optional_kernel`` may run through the explicit CPU fallback
    instead), every kernel belongs to a declared op; the split is reported."""
    kernels = backend.impl.kernels
    missing = sorted(op.name for op in primitives() if op.name not in kernels and not op.optional_kernel)
    fallback = sorted(op.name for op in primitives() if op.name not in kernels and op.optional_kernel)
    unknown = sorted(set(kernels) - set(OPS))
    overridden = sorted(op.name for op in composites() if op.name in kernels)
    inherited = sorted(op.name for op in composites() if op.name not in kernels)
    request.config.stash[SUMMARY] = [
        f"{backend.name}: {len(primitives()) - len(missing) - len(fallback)} of {len(primitives())} primitives "
        f"implemented" + (f" (missing: {', '.join(missing)})" if missing else ""),
        f"{backend.name}: {len(fallback)} optional primitives run through the explicit cpu fallback (no kernel): "
        f"{', '.join(fallback) or 'none'}",
        f"{backend.name}: {len(overridden)} composites run as its own kernels: {', '.join(overridden) or 'none'}",
        f"{backend.name}: {len(inherited)} composites run from their core definition: {', '.join(inherited)}",
    ]
    record = request.node.user_properties
    record += [("primitives", sorted(set(kernels) - set(overridden))), ("cpu_fallback_primitives", fallback),
               ("overridden_composites", overridden),
               ("core_composites", inherited)]
    assert not missing, f"{backend.name} has no kernel for the primitives {missing}"
    assert not unknown, f"{backend.name} has kernels for undeclared ops {unknown}"
