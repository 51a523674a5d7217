"""ember.stft and ember.istft (and the Tensor methods) against torch's: values and gradients for real and complex
signals and windows, centring and its pad modes, short windows, hops, normalized, one- and two-sided, the real
view (return_complex=False), align_to_window, istft's length; and PyTorch's errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from fft_parity import assert_same, assert_same_error, assert_same_gradients, pair, torch

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch's "no window given" and the like

STFT_CASES = [
    dict(n_fft=8),
    dict(n_fft=8, hop_length=3, window="hann"),
    dict(n_fft=10, hop_length=3, win_length=7, window="hann", pad_mode="constant", normalized=True),
    dict(n_fft=9, hop_length=2, window="hamming", pad_mode="replicate"),
    dict(n_fft=6, hop_length=2, win_length=5, center=False, onesided=False),
    dict(n_fft=8, hop_length=4, win_length=6, window="hann", center=False, align_to_window=True),
    dict(n_fft=7, hop_length=1, window="hann", pad_mode="circular"),
]


def _windows(case: dict, real_dtype: str):
    """The case's keywords for ember and torch, its window made by each library's own window function."""
    ours, theirs = dict(case), dict(case)
    kind = case.get("window")
    if kind is not None:
        length = case.get("win_length", case["n_fft"])
        ours["window"] = getattr(ember, f"{kind}_window")(length, dtype=getattr(ember, real_dtype))
        theirs["window"] = getattr(torch, f"{kind}_window")(length, dtype=getattr(torch, real_dtype))
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("case", STFT_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_stft_values_and_gradients(dtype, case):
    rng = np.random.default_rng(31)
    ours_kw, theirs_kw = _windows(case, dtype.replace("complex64", "float32").replace("complex128", "float64"))
    for shape in ((41,), (2, 30)):
        for return_complex in (True, False):
            if not return_complex and dtype.startswith("complex"):
                continue  # a complex signal's STFT is complex
            x, tx = pair(shape, dtype, rng, requires_grad=True)
            ours = ember.stft(x, return_complex=return_complex, **ours_kw)
            theirs = torch.stft(tx, return_complex=return_complex, **theirs_kw)
            assert_same(ours, theirs)
            assert_same_gradients(ours, theirs, [(x, tx)], rng, dtype)


def test_complex_window_and_its_gradient():
    rng = np.random.default_rng(32)
    x, tx = pair((30,), "float64", rng, requires_grad=True)
    w, tw = pair((8,), "complex128", rng, requires_grad=True)
    ours, theirs = ember.stft(x, 8, 2, window=w), torch.stft(tx, 8, 2, window=tw)
    assert ours.dtype is ember.complex128
    assert_same(ours, theirs)
    assert_same_gradients(ours, theirs, [(x, tx), (w, tw)], rng, "complex128")


def test_tensor_methods():
    rng = np.random.default_rng(33)
    x, tx = pair((3, 20), "float32", rng)
    window, twindow = ember.hann_window(8), torch.hann_window(8)
    spectrum = x.stft(8, 2, window=window, return_complex=True)
    assert_same(spectrum, tx.stft(8, 2, window=twindow, return_complex=True))
    assert_same(spectrum.istft(8, 2, window=window), tx.stft(8, 2, window=twindow, return_complex=True).istft(
        8, 2, window=twindow))


ISTFT_CASES = [
    dict(n_fft=8, hop_length=2, window="hann"),
    dict(n_fft=8, hop_length=2, window="hann", length=45),
    dict(n_fft=8, hop_length=2, window="hann", length=30),
    dict(n_fft=10, hop_length=3, win_length=7, window="hamming", normalized=True),
    dict(n_fft=6, hop_length=2, center=False),
    dict(n_fft=9, hop_length=3, window="hann", onesided=False),
    dict(n_fft=8, hop_length=2, window="hann", onesided=False, return_complex=True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ISTFT_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_istft_values_and_gradients(dtype, case):
    rng = np.random.default_rng(34)
    complex_dtype = "complex64" if dtype == "float32" else "complex128"
    stft_keywords = ("n_fft", "hop_length", "win_length", "window", "center", "normalized", "onesided")
    stft_case = {k: v for k, v in case.items() if k in stft_keywords}
    ours_kw, theirs_kw = _windows(case, dtype)
    for shape in ((40,), (2, 33)):
        signal, tsignal = pair(shape, complex_dtype if case.get("return_complex") else dtype, rng)
        stft_ours, stft_theirs = _windows(stft_case, dtype)
        spectrum = ember.stft(signal, **stft_ours, return_complex=True).detach().requires_grad_()
        tspectrum = torch.stft(tsignal, **stft_theirs, return_complex=True).detach().requires_grad_()
        ours, theirs = ember.istft(spectrum, **ours_kw), torch.istft(tspectrum, **theirs_kw)
        assert_same(ours, theirs)
        assert_same_gradients(ours, theirs, [(spectrum, tspectrum)], rng, complex_dtype)


def test_round_trip_recovers_the_signal():
    signal = ember.tensor(np.random.default_rng(35).standard_normal((2, 50)))
    window = ember.hann_window(16, dtype=ember.float64)
    spectrum = ember.stft(signal, 16, 4, window=window, return_complex=True)
    np.testing.assert_allclose(ember.istft(spectrum, 16, 4, window=window, length=50).numpy(), signal.numpy(),
                               atol=1e-12)


def test_istft_pads_to_a_longer_length_with_a_warning():
    rng = np.random.default_rng(38)
    signal, tsignal = pair((20,), "float64", rng)
    window, twindow = ember.hann_window(8, dtype=ember.float64), torch.hann_window(8, dtype=torch.float64)
    spectrum = ember.stft(signal, 8, 2, window=window, return_complex=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ember.istft(spectrum, 8, 2, window=window, length=40)
    assert any("shorter than the length parameter" in str(w.message) for w in caught)
    theirs = torch.istft(torch.stft(tsignal, 8, 2, window=twindow, return_complex=True), 8, 2, window=twindow,
                         length=40)
    assert_same(out, theirs)
    assert not out.numpy()[24:].any()  # the 28 overlap-added points less the 4 of centring, then zeros


def _stft_pair(data, *args, **kwargs):
    ours_kw = {k: ember.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    return (lambda: ember.stft(ember.tensor(data), *args, **ours_kw),
            lambda: torch.stft(torch.tensor(data), *args, **kwargs))


def _istft_pair(data, *args, **kwargs):
    ours_kw = {k: ember.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    return (lambda: ember.istft(ember.tensor(data), *args, **ours_kw),
            lambda: torch.istft(torch.tensor(data), *args, **kwargs))


SIGNAL = np.random.default_rng(36).standard_normal(20)
SPECTRUM = np.random.default_rng(37).standard_normal((5, 6)) * (1 + 1j)

ERRORS = [
    (_stft_pair(SIGNAL, 8), "stft requires the return_complex parameter be given for real inputs"),
    (_stft_pair(SIGNAL, 8, return_complex=True, align_to_window=True),
     "stft align_to_window should only be set when center = false"),
    (_stft_pair(SIGNAL.reshape(1, 2, 10), 4, return_complex=True), "expected a 1D or 2D tensor"),
    (_stft_pair(SIGNAL, 32, center=False, return_complex=True), "expected 0 < n_fft"),
    (_stft_pair(SIGNAL, 8, 0, return_complex=True), "expected hop_length > 0, but got hop_length=0"),
    (_stft_pair(SIGNAL, 8, 2, 9, return_complex=True), "expected 0 < win_length <= n_fft, but got win_length=9"),
    (_stft_pair(SIGNAL, 8, window=torch.ones(7), return_complex=True),
     "expected a 1D window tensor of size equal to win_length=8"),
    (_stft_pair(SIGNAL * 1j, 8, onesided=True), "Cannot have onesided output if window or input is complex"),
    (_istft_pair(SPECTRUM.real, 8), "istft requires a complex-valued input tensor matching the output from stft"),
    (_istft_pair(SPECTRUM, 8, 2, window=torch.zeros(8)), "window overlap add min"),
    (_istft_pair(SPECTRUM, 10), "expected the frequency dimension"),
    (_istft_pair(SPECTRUM, 8, 9, 8), "expected 0 < hop_length <= win_length"),
    (_istft_pair(SPECTRUM, 8, 2, window=torch.ones(6)), "Invalid window shape"),
    (_istft_pair(SPECTRUM[:0], 8), "input tensor cannot be empty"),
    (_istft_pair(SPECTRUM, 8, 2, window=torch.ones(8, dtype=torch.complex128)),
     "Complex windows are incompatible with return_complex=False"),
]


@pytest.mark.parametrize("calls, phrase", ERRORS, ids=[phrase for _, phrase in ERRORS])
def test_errors_match_torch(calls, phrase):
    assert_same_error(*calls, phrase)
