"""Gradients of every ember.fft transform against torch.fft's (PyTorch's conjugate Wirtinger convention for
complex inputs), at both precisions, with n/s padding and cutting, every norm; and finite differences of the three
primitives' derivatives, which every transform's gradient is made of."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft
from ember.dispatch.ops import F
from fft_parity import assert_same_gradients, pair, torch

ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
MULTI_D = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn",
           "ihfftn")
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
CASES_1D = (dict(), dict(n=4, dim=0, norm="ortho"), dict(n=12, norm="forward"), dict(n=9, dim=-2))
CASES_ND = (dict(), dict(s=(3, 8), norm="ortho"), dict(s=(-1, 7), dim=(-1, 0), norm="forward"), dict(dim=(1, 2)))


def _with_inputs(names):
    return [(name, dtype) for name in names for dtype in ("float32", "float64", "complex64", "complex128")
            if not (name in REAL_ONLY and dtype.startswith("complex"))]


@pytest.mark.parametrize("name, dtype", _with_inputs(ONE_D))
def test_one_dimensional_gradients(name, dtype):
    rng = np.random.default_rng(11)
    for kwargs in CASES_1D:
        x, tx = pair((5, 6), dtype, rng, requires_grad=True)
        ours, theirs = getattr(ember.fft, name)(x, **kwargs), getattr(torch.fft, name)(tx, **kwargs)
        assert_same_gradients(ours, theirs, [(x, tx)], rng, dtype)


@pytest.mark.parametrize("name, dtype", _with_inputs(MULTI_D))
def test_multi_dimensional_gradients(name, dtype):
    rng = np.random.default_rng(12)
    for kwargs in CASES_ND:
        x, tx = pair((3, 5, 6), dtype, rng, requires_grad=True)
        ours, theirs = getattr(ember.fft, name)(x, **kwargs), getattr(torch.fft, name)(tx, **kwargs)
        assert_same_gradients(ours, theirs, [(x, tx)], rng, dtype)


def test_gradient_through_a_loss_of_magnitudes():
    """A real loss of a complex spectrum (a power spectrum), back to a real signal."""
    rng = np.random.default_rng(13)
    x, tx = pair((2, 16), "float64", rng, requires_grad=True)
    (ember.fft.rfft(x, norm="ortho").abs() ** 2).sum().backward()
    (torch.fft.rfft(tx, norm="ortho").abs() ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)


def test_shift_gradients():
    rng = np.random.default_rng(14)
    x, tx = pair((5, 4), "complex128", rng, requires_grad=True)
    assert_same_gradients(ember.fft.fftshift(x, 0), torch.fft.fftshift(tx, 0), [(x, tx)], rng, "complex128")


@pytest.mark.parametrize("case", [
    ("_fft_c2c", (4, 5), "complex128", ((0, 1), 1, True)),
    ("_fft_c2c", (6,), "complex128", ((0,), 2, False)),
    ("_fft_r2c", (3, 6), "float64", ((1,), 0, True)),
    ("_fft_r2c", (5, 3), "float64", ((1, 0), 2, True)),
    ("_fft_r2c", (4, 3), "float64", ((0,), 1, False)),
    ("_fft_c2r", (3, 4), "complex128", ((1,), 0, 6)),
    ("_fft_c2r", (3, 4), "complex128", ((0, 1), 2, 7)),
], ids=lambda case: f"{case[0]}-{case[1]}-{case[3]}")
def test_primitive_derivatives_by_finite_differences(case):
    name, shape, dtype, attributes = case
    rng = np.random.default_rng(15)
    x, _ = pair(shape, dtype, rng, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: getattr(F, name)(t, *attributes), (x,))


@pytest.mark.parametrize("name, attributes", [("_fft_c2c", ((1,), 1, False)), ("_fft_r2c", ((1,), 2, True)),
                                              ("_fft_c2r", ((1,), 0, 8))])
def test_primitive_gradients_match_torch(name, attributes):
    rng = np.random.default_rng(16)
    dtype = "float64" if name == "_fft_r2c" else "complex128"
    x, tx = pair((3, 5), dtype, rng, requires_grad=True)
    ours, theirs = getattr(F, name)(x, *attributes), getattr(torch, name)(tx, *attributes)
    assert_same_gradients(ours, theirs, [(x, tx)], rng, dtype)
