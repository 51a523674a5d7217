"""The shared array kernels of the three transform primitives (``backends/arraykernels/fft.py``), on NumPy as the
CPU backend builds them: precision kept, each normalization in each direction, empty batches."""
from __future__ import annotations

import numpy as np
import pytest

from ember.backends.arraykernels import fft
from ember.backends.cpu.library import NUMPY

KERNELS = fft.build(NUMPY)
RNG = np.random.default_rng(41)
SIGNAL = RNG.standard_normal((3, 6, 5))
SPECTRUM = SIGNAL + 1j * RNG.standard_normal((3, 6, 5))
#: normalization -> the factor of a transform of n points, forward and inverse (NumPy's "backward" convention)
FACTORS = {0: lambda n: (1, n), 1: lambda n: (1 / np.sqrt(n), np.sqrt(n)), 2: lambda n: (1 / n, 1)}


@pytest.mark.parametrize("normalization", [0, 1, 2])
def test_c2c_scales_each_direction(normalization):
    forward, inverse = FACTORS[normalization](6 * 5)
    np.testing.assert_allclose(KERNELS["_fft_c2c"](SPECTRUM, (1, 2), normalization, True),
                               np.fft.fftn(SPECTRUM, axes=(1, 2)) * forward)
    np.testing.assert_allclose(KERNELS["_fft_c2c"](SPECTRUM, (1, 2), normalization, False),
                               np.fft.ifftn(SPECTRUM, axes=(1, 2)) * inverse)


@pytest.mark.parametrize("normalization", [0, 1, 2])
def test_r2c_and_c2r_scale_each_direction(normalization):
    forward, _ = FACTORS[normalization](3 * 6)
    np.testing.assert_allclose(KERNELS["_fft_r2c"](SIGNAL, (0, 1), normalization, True),
                               np.fft.rfftn(SIGNAL, axes=(0, 1)) * forward)
    np.testing.assert_allclose(KERNELS["_fft_r2c"](SIGNAL, (0, 1), normalization, False),
                               np.fft.fftn(SIGNAL, axes=(0, 1)) * forward)
    bins, (_, inverse) = SPECTRUM[:, :4], FACTORS[normalization](3 * 7)  # c2r's n: the output's sizes
    np.testing.assert_allclose(KERNELS["_fft_c2r"](bins, (0, 1), normalization, 7),
                               np.fft.irfftn(bins, s=(3, 7), axes=(0, 1)) * inverse)


def test_single_precision_is_kept():
    single = SPECTRUM.astype(np.complex64)
    assert KERNELS["_fft_c2c"](single, (2,), 0, True).dtype == np.complex64
    assert KERNELS["_fft_r2c"](SIGNAL.astype(np.float32), (2,), 0, True).dtype == np.complex64
    assert KERNELS["_fft_r2c"](SIGNAL.astype(np.float32), (2,), 0, False).dtype == np.complex64
    assert KERNELS["_fft_c2r"](single[..., :3], (2,), 0, 4).dtype == np.float32


def test_empty_batches_give_zeros_of_the_output_shape():
    empty = np.zeros((0, 8))
    assert KERNELS["_fft_r2c"](empty, (1,), 0, True).shape == (0, 5)
    assert KERNELS["_fft_c2r"](np.zeros((0, 5), np.complex64), (1,), 0, 8).dtype == np.float32
    assert KERNELS["_fft_c2c"](empty.astype(np.complex128), (1,), 1, False).shape == (0, 8)
