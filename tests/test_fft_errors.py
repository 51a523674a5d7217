"""ember.fft's errors against torch.fft's: the same exception class and PyTorch's wording, for bad dims, sizes,
norms and dtypes; and the three primitives' own checks."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft
from ember.dispatch.ops import F
from fft_parity import assert_same_error, torch

RNG = np.random.default_rng(21)
REAL = RNG.standard_normal((3, 4))
COMPLEX = REAL + 1j * RNG.standard_normal((3, 4))


def _both(name: str, data, *args, **kwargs):
    """The same call of ember.fft.<name> and torch.fft.<name>, on the same values."""
    return (lambda: getattr(ember.fft, name)(ember.tensor(data), *args, **kwargs),
            lambda: getattr(torch.fft, name)(torch.tensor(data), *args, **kwargs))


CASES = [
    (("fft", REAL), {"norm": "bad"}, 'Invalid normalization mode: "bad"'),
    (("rfftn", REAL), {"norm": "Ortho"}, 'Invalid normalization mode: "Ortho"'),
    (("fft", REAL), {"dim": 2}, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (("ifft", REAL), {"dim": -3}, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (("fft", np.float64(1.5)), {}, "Dimension specified as -1 but tensor has no dimensions"),
    (("fft", REAL), {"n": 0}, "Invalid number of data points (0) specified"),
    (("rfft", REAL), {"n": -1}, "Invalid number of data points (-1) specified"),
    (("irfft", COMPLEX[:, :1]), {}, "Invalid number of data points (0) specified"),
    (("fftn", REAL), {"dim": (0, 0)}, "FFT dims must be unique"),
    (("rfft2", REAL), {"dim": (1, -1)}, "FFT dims must be unique"),
    (("fftn", REAL), {"s": (2,), "dim": (0, 1)}, "When given, dim and shape arguments must have the same length"),
    (("ifftn", REAL), {"s": (2, 2, 2)}, "Got shape with 3 values but input tensor only has 2 dimensions"),
    (("fftn", REAL), {"s": (0, 2)}, "Invalid number of data points (0) specified"),
    (("fft2", REAL[0]), {}, "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (("rfft", COMPLEX), {}, "rfft expects a real input tensor, but got ComplexDouble"),
    (("ihfft", COMPLEX), {}, "ihfft expects a real input tensor, but got ComplexDouble"),
    (("rfftn", COMPLEX), {}, "expects a real"),
    (("irfftn", REAL), {"dim": ()}, "irfftn must transform at least one axis"),
    (("rfftn", REAL), {"dim": ()}, "rfftn must transform at least one axis"),
    (("ihfftn", REAL), {"dim": ()}, "ihfftn must transform at least one axis"),
    (("hfftn", COMPLEX), {"dim": ()}, "hfftn must transform at least one axis"),
    (("irfftn", COMPLEX), {"s": (3, 0)}, "Invalid number of data points (0) specified"),
    (("fftshift", REAL), {"dim": 5}, "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
]


@pytest.mark.parametrize("call, kwargs, phrase", CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_errors_match_torch(call, kwargs, phrase):
    name, data = call
    assert_same_error(*_both(name, data, **kwargs), phrase)


def test_error_names_the_op_and_the_operand():
    with pytest.raises(RuntimeError, match=r"fft_rfft: .*ComplexDouble.*tensor\(shape=\(3, 4\), dtype=complex128"):
        ember.fft.rfft(ember.tensor(COMPLEX))


def test_frequency_errors_match_torch():
    assert_same_error(lambda: ember.fft.fftfreq(4, dtype=ember.int64), lambda: torch.fft.fftfreq(4, dtype=torch.int64),
                      "fftfreq requires a floating point or complex dtype")
    for name, n in (("fftfreq", -1), ("rfftfreq", -4)):
        assert_same_error(lambda: getattr(ember.fft, name)(n), lambda: getattr(torch.fft, name)(n),
                          "Trying to create tensor with negative dimension -1: [-1]")


def test_primitive_checks():
    x = ember.ones(3, 8, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="_fft_c2c: FFT dims must be unique"):
        F._fft_c2c(x, [1, -1], 0, True)
    with pytest.raises(RuntimeError, match="_fft_c2c: expects at least one dim"):
        F._fft_c2c(x, [], 0, True)
    with pytest.raises(RuntimeError, match="normalization must be 0"):
        F._fft_c2c(x, [0], 3, True)
    with pytest.raises(TypeError, match="_fft_r2c: _fft_r2c expects a real input tensor, but got ComplexFloat"):
        F._fft_r2c(x, [1], 0, True)
    with pytest.raises(RuntimeError, match="_fft_c2r: a signal of 10 points has 6 bins in dim 1, got 8"):
        F._fft_c2r(x, [1], 0, 10)
    with pytest.raises(RuntimeError, match=r"_fft_c2r: Invalid number of data points \(0\)"):
        F._fft_c2r(x, [1], 0, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F._fft_r2c(ember.ones(3), [1], 0, True)
