"""ember.fft's values against torch.fft's: every transform at both precisions, real and complex inputs, odd and even
sizes, n and s padding and cutting, all three norms, several and negative dims; the helpers; out=; the names."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.fft
from fft_parity import assert_same, assert_same_error, pair, torch

NORMS = (None, "backward", "ortho", "forward")
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
MULTI_D = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn",
           "ihfftn")
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}  # real signals in
DTYPES = ("float32", "float64", "complex64", "complex128")


def _with_inputs(names):
    """(name, input dtype) pairs: complex inputs only for the functions that take them."""
    return [(name, dtype) for name in names for dtype in DTYPES
            if not (name in REAL_ONLY and dtype.startswith("complex"))]


@pytest.mark.parametrize("name, dtype", _with_inputs(ONE_D))
@pytest.mark.parametrize("n", [None, 4, 11], ids=["n=None", "cut", "padded"])
def test_one_dimensional_transforms(name, dtype, n):
    rng = np.random.default_rng(1)
    x, tx = pair((3, 7), dtype, rng)
    for norm in NORMS:
        for dim in (0, -1):
            ours = getattr(ember.fft, name)(x, n, dim, norm)
            theirs = getattr(torch.fft, name)(tx, n, dim, norm)
            assert_same(ours, theirs)


@pytest.mark.parametrize("name, dtype", _with_inputs(MULTI_D))
def test_multi_dimensional_transforms(name, dtype):
    rng = np.random.default_rng(2)
    x, tx = pair((4, 5, 6), dtype, rng)
    two_d = name.endswith("2")
    cases = [dict(), dict(s=(3, 8)), dict(s=(-1, 7), dim=(-1, 0)), dict(dim=(0, 1))]
    if not two_d:
        cases += [dict(s=(5, 2, 9)), dict(dim=(2, 0, 1)), dict(dim=1)]
    for kwargs in cases:
        for norm in NORMS:
            ours = getattr(ember.fft, name)(x, norm=norm, **kwargs)
            theirs = getattr(torch.fft, name)(tx, norm=norm, **kwargs)
            assert_same(ours, theirs)


@pytest.mark.parametrize("name", ONE_D + MULTI_D)
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_and_bool_signals_transform_in_the_default_float(name, dtype):
    rng = np.random.default_rng(3)
    x, tx = pair((4, 6), dtype, rng)
    assert_same(getattr(ember.fft, name)(x), getattr(torch.fft, name)(tx))


def test_complex64_stays_single_precision():
    x = ember.randn(64, dtype=ember.complex64)
    assert ember.fft.fft(x).dtype is ember.complex64
    assert ember.fft.irfft(x).dtype is ember.float32
    assert ember.fft.rfft(ember.randn(64, dtype=ember.float64)).dtype is ember.complex128


def test_half_precision_signals_transform_in_complex64():
    """Ember has no complex32, so float16 goes where float32 goes (PyTorch's CPU refuses half)."""
    x = ember.randn(8).to(ember.float16)
    out = ember.fft.fft(x)
    assert out.dtype is ember.complex64
    np.testing.assert_allclose(out.numpy(), np.fft.fft(x.numpy().astype(np.float32)), rtol=1e-5, atol=1e-5)


def test_no_dims_to_transform():
    """fftn of a 0-d tensor (or over dim=()) transforms nothing: the input, complex."""
    for x, tx in (pair((), "float64", np.random.default_rng(4)), pair((2, 3), "complex64", np.random.default_rng(5))):
        assert_same(ember.fft.fftn(x, dim=()), torch.fft.fftn(tx, dim=()))
    zero_d = ember.tensor(2.5)
    assert_same(ember.fft.fftn(zero_d), torch.fft.fftn(torch.tensor(2.5)))
    assert_same(ember.fft.ifft2(ember.ones(2, 3), dim=()), torch.fft.ifft2(torch.ones(2, 3), dim=()))


def test_empty_batches():
    """(PyTorch's MKL refuses these; NumPy's shapes are the answer.)"""
    for name in ("fft", "rfft", "irfft", "hfft", "ihfft", "fft2", "irfft2"):
        ours = getattr(ember.fft, name)(ember.zeros(0, 4, 6))
        assert tuple(ours.shape) == getattr(np.fft, name)(np.zeros((0, 4, 6))).shape
        assert not ours.numpy().size


def test_round_trips():
    rng = np.random.default_rng(6)
    signal = ember.tensor(rng.standard_normal((3, 9)))
    for norm in NORMS:
        np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(signal, norm=norm), 9, norm=norm).numpy(),
                                   signal.numpy(), atol=1e-12)
        np.testing.assert_allclose(ember.fft.ifftn(ember.fft.fftn(signal, norm=norm), norm=norm).numpy(),
                                   signal.numpy(), atol=1e-12)
        np.testing.assert_allclose(ember.fft.hfft(ember.fft.ihfft(signal, norm=norm), 9, norm=norm).numpy(),
                                   signal.numpy(), atol=1e-12)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(7)
    x, tx = pair((6, 8), "complex128", rng)
    assert_same(ember.fft.fft(x.T, dim=0), torch.fft.fft(tx.T, dim=0))
    assert_same(ember.fft.rfftn(x.real[::2, 1::2]), torch.fft.rfftn(tx.real[::2, 1::2]))


def test_out_argument():
    rng = np.random.default_rng(8)
    x, tx = pair((5, 4), "float64", rng)
    out = ember.empty(5, 3, dtype=ember.complex128)
    result = ember.fft.rfft(x, out=out)
    assert result is out
    assert_same(out, torch.fft.rfft(tx))
    wrong = ember.empty(5, 3, dtype=ember.float32)
    with pytest.raises(RuntimeError):
        ember.fft.rfft(x, out=wrong)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n", [0, 1, 7, 8])
def test_frequencies(name, n):
    for d in (1.0, 0.25):
        assert_same(getattr(ember.fft, name)(n, d), getattr(torch.fft, name)(n, d))
    assert_same(getattr(ember.fft, name)(n, dtype=ember.float64), getattr(torch.fft, name)(n, dtype=torch.float64))
    for dtype in ("complex64", "complex128"):  # PyTorch's check accepts them, then its CPU arange refuses them
        theirs = getattr(torch.fft, name)(n, dtype=torch.float64).to(getattr(torch, dtype))
        assert_same(getattr(ember.fft, name)(n, dtype=getattr(ember, dtype)), theirs)


def test_frequencies_take_the_factory_keywords():
    freq = ember.fft.fftfreq(4, requires_grad=True, layout=ember.strided, device="cpu")
    assert freq.requires_grad and freq.device.type == "cpu"
    out = ember.empty(3)
    assert ember.fft.rfftfreq(4, 0.5, out=out) is out
    assert_same(out, torch.fft.rfftfreq(4, 0.5))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name):
    rng = np.random.default_rng(9)
    x, tx = pair((5, 4, 3), "complex64", rng)
    for dim in (None, 0, -1, (0, 2), [1]):
        assert_same(getattr(ember.fft, name)(x, dim), getattr(torch.fft, name)(tx, dim))
    assert_same(getattr(ember.fft, name)(ember.arange(7)), getattr(torch.fft, name)(torch.arange(7)))
    assert_same_error(lambda: getattr(ember.fft, name)(ember.tensor(3.0)),
                      lambda: getattr(torch.fft, name)(torch.tensor(3.0)), "")  # nothing to roll


def test_shifts_undo_each_other():
    x = ember.arange(30.0).reshape(5, 6)
    assert ember.equal(ember.fft.ifftshift(ember.fft.fftshift(x)), x)
    centred = ember.fft.fftshift(ember.fft.fftfreq(5))
    assert centred.numpy().tolist() == sorted(centred.numpy().tolist())


def test_every_torch_fft_name_is_there_with_its_signature():
    from ember.compat.report import compare_all
    report, = compare_all(torch, ember, ("fft",))
    assert not report.missing and not report.mismatches and not report.stubs
    names = {n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))}
    assert names - {"Tensor"} <= set(ember.fft.__all__)


def test_vmap_runs_each_transform_once_on_the_batch():
    """The primitives' batching rule: no per-element loop (which warns), the same values."""
    rng = np.random.default_rng(10)
    x, tx = pair((3, 4, 8), "float64", rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ember.func.vmap(lambda t: ember.fft.rfft2(t, dim=(-1, 0), norm="ortho"))(x)
        inverse = ember.func.vmap(lambda t: ember.fft.ifft(t, dim=-2))(ours)
    assert_same(ours, torch.vmap(lambda t: torch.fft.rfft2(t, dim=(-1, 0), norm="ortho"))(tx))
    assert_same(inverse, torch.fft.ifft(torch.fft.rfft2(tx, dim=(-1, 1), norm="ortho"), dim=-2))
