"""Parity with the CPU backend: one computation run on the CPU and on the device under test, compared.

``test_modules`` (a layer's output, input and parameter gradients, buffers) and ``test_optim`` (parameters
and optimizer state after several steps) build their subject on the CPU from a fixed seed, copy it to the
device, feed both copies the very same values, and compare every tensor that comes out.

Why the CPU backend, in the dtype under test, is the reference: modules and optimizers are core code
written in Ember ops, so a difference can only come from the backend's kernels (or from state that did not
follow the module to the device). Comparing in the same dtype on both sides asks no more of the backend than
its own rounding; per-op accuracy against exact references is ``test_values``' and ``test_gradients``' job.

Tolerances are ``compare.DEFAULT_TOLERANCES`` for the dtype, with ``atol`` relative to the largest magnitude
of the expected tensor (``gradients.gradient_mismatch``: a matmul, a convolution or a reduction sums many
terms, and a backend may sum them in another order), times a per-case ``scale`` where a long chain of
such sums compounds the differences (each case that loosens says why).
"""
from __future__ import annotations

import copy

import numpy as np

import ember

from .compare import DEFAULT_TOLERANCES, mismatch
from .gradients import gradient_mismatch
from .oracle import host

CPU = ember.device("cpu")

#: The dtypes parity runs in: float32 (every backend has it) and float64 where the backend supports it.
#: Half precision gets its checks per op (test_gradients); whole layers in it say little more.
PARITY_DTYPES = ("float32", "float64")


def parity_dtypes(supported) -> list:
    """The PARITY_DTYPES among the backend's ``supported`` dtypes, in that order."""
    names = {d.name: d for d in supported}
    return [names[n] for n in PARITY_DTYPES if n in names]


def tolerance(dt, scale: float = 1.0) -> tuple[float, float]:
    """(rtol, atol) for comparing tensors of dtype ``dt`` computed on two backends, loosened by ``scale``."""
    rtol, atol = DEFAULT_TOLERANCES.get(dt.to_real().name, (0.0, 0.0))
    return rtol * scale, atol * scale


def to_device(module, device):
    """A deep copy of ``module`` moved to ``device``; fails if a parameter or buffer stayed behind."""
    copied = copy.deepcopy(module).to(device)
    for kind, named in (("parameter", copied.named_parameters()), ("buffer", copied.named_buffers())):
        for name, t in named:
            assert t.device == device, f"{type(module).__name__}.to({device}) left {kind} {name!r} on {t.device}"
    return copied


def assert_matches(actual, expected, what: str, device, scale: float = 1.0) -> None:
    """``actual`` (from the device) equals ``expected`` (from the CPU): device, dtype, shape, then values.

    Floating values within ``tolerance(dtype, scale)`` (NaN where NaN), others exactly. ``what`` names the
    tensor in the failure message.
    """
    if expected is None or actual is None:
        assert actual is None and expected is None, \
            f"{what}: {'missing' if actual is None else 'present'} on {device}, " \
            f"{'missing' if expected is None else 'present'} on cpu"
        return
    assert actual.device == device, f"{what} is on {actual.device}, expected {device}"
    assert actual.dtype is expected.dtype, f"{what} is {actual.dtype.name}, on cpu it is {expected.dtype.name}"
    assert_values_match(host(actual), host(expected), expected.dtype, what, device, scale)


def assert_values_match(got: np.ndarray, want: np.ndarray, dt, what: str, device, scale: float = 1.0) -> None:
    """Host values computed from the device (``got``) and from the CPU (``want``), for tensors of dtype ``dt``,
    agree as ``assert_matches`` requires."""
    if dt.is_inexact:
        rtol, atol = tolerance(dt, scale)
        problem = gradient_mismatch(got, want.astype(np.complex128 if dt.is_complex else np.float64), dt, rtol, atol)
    else:
        problem = mismatch(got, want, dt, 0.0, 0.0)
    assert problem is None, f"{what} ({dt.name}) on {device} differs from the cpu backend's: {problem}"


def pair(values: np.ndarray, dtype, device, requires_grad: bool = False):
    """The same host values as a CPU tensor and a device tensor (leaves requiring grad when asked)."""
    return tuple(ember.tensor(values, dtype=dtype, device=d, requires_grad=requires_grad) for d in (CPU, device))
