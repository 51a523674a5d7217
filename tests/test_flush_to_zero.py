"""Float32 results that survive flush-to-zero, as CUDA computes them, checked on the cpu backend.

CuPy compiles every kernel with ``-ftz=true``: a float32 subnormal, given to a kernel or produced by one,
is zero on the GPU, where NumPy keeps it. A formula built on subnormal constants then loses terms: on an
H200, I₁(-19.99) summed by Horner from the coefficients 1/(k! (k+1)!) came out 1000 short of 4.2e7
(2.4e-5 of its value, over the 2e-5 tolerance), because those coefficients are subnormal from k = 20.

``FlushToZero`` emulates that on the cpu backend. It is a dispatch mode that sees every op call, the inner
ops of composites included, and flushes the float32 subnormals among the Python numbers an op is given and
in every float32 result. Under it, the special functions (composites written in Ember ops) must still meet
their float32 tolerances on their conformance samples.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.conformance.checks import check_values
from ember.conformance.make import Maker
from ember.conformance.samples import fixed_samples
from ember.conformance.target import resolve
from ember.dispatch import OPS, DispatchMode
from ember.dispatch.schema.dtypes import float32
from ember.dispatch.ops import F

_TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32
_CPU = resolve("cpu")


def _flush_array(data) -> None:
    """Zero the float32 subnormals of a cpu tensor's array in place, keeping their signs, as CUDA does
    (read-only arrays are broadcast views of arrays flushed already)."""
    if isinstance(data, np.ndarray) and data.dtype == np.float32 and data.flags.writeable:
        np.copyto(data, np.copysign(np.float32(0.0), data), where=np.abs(data) < _TINY)


class FlushToZero(DispatchMode):
    """Every op computes as a CUDA kernel built with -ftz=true does, as far as float32 values go: Python
    numbers given to an op with a float32 tensor operand, and float32 results, are flushed when subnormal.
    Tensors made outside the mode (a test's inputs) are taken as they are: give them no subnormals."""

    observes_nested = True  # a composite's inner ops are separate kernels on CUDA

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, ember.Tensor)]
        if any(t.dtype is float32 for t in tensors):
            args = tuple(self._flush_number(v) for v in args)
            kwargs = {k: self._flush_number(v) for k, v in kwargs.items()}
        result = func(*args, **kwargs)
        for out in result if isinstance(result, (tuple, list)) else (result,):
            if isinstance(out, ember.Tensor):
                _flush_array(out._data)
        return result

    @staticmethod
    def _flush_number(value):
        return math.copysign(0.0, value) if isinstance(value, float) and abs(value) < _TINY else value


def test_the_emulation_flushes_subnormal_results_and_constants():
    x = ember.tensor([1e-20, -1e-20, 1.0], dtype=ember.float32)
    assert F.mul(x, 1e-20)[0].item() != 0.0, "NumPy keeps the float32 subnormal 1e-40"
    with FlushToZero():
        small, negative, normal = F.mul(x, 1e-20).tolist()
        assert small == 0.0 and negative == 0.0 and math.copysign(1.0, negative) == -1.0, "flushed, sign kept"
        assert normal == pytest.approx(1e-20), "normal values pass"
        assert F.add(F.zeros_like(x), 1e-40)[0].item() == 0.0, "a subnormal constant is flushed"


def _special_functions() -> list:
    """The ops declared in core/dispatch/ops/elementwise/special*.py that have a reference and samples."""
    return [op for op in sorted(OPS.values(), key=lambda op: op.name)
            if op.source and op.source[0].rsplit("/", 1)[-1].startswith("special")
            and op.reference is not None and op.samples is not None]


@pytest.mark.parametrize("op", _special_functions(), ids=lambda op: op.name)
def test_special_functions_meet_their_float32_tolerance_with_subnormals_flushed(op):
    samples = fixed_samples(op, Maker(_CPU, float32, seed=11), float32)
    if not samples:
        pytest.skip(f"{op.name} has no float32 samples")
    with FlushToZero():
        compared = sum(check_values(op, sample, _CPU) for sample in samples)
    assert compared, f"{op.name}: no float32 sample was compared"


def test_i1_near_the_series_border_keeps_the_terms_cuda_would_flush():
    """The H200's failing value: I₁(-19.99) = -42042626.5 (SciPy), within float32's 2e-5."""
    with FlushToZero():
        got = ember.special.i1(ember.tensor([-19.99], dtype=ember.float32)).item()
    assert got == pytest.approx(-42042626.53616809, rel=2e-5)
