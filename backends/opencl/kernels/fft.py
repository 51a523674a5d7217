"""ember.fft's primitives on the device (``fft_axis`` transforms one axis, ``fft_kernels`` holds the OpenCL C):
the n-d transforms run one axis after the other, and no data goes through the host.

- c2c: the DFT over each dim in turn; the normalization is folded into the last pass.
- r2c: the last dim in ``dim`` first, then the others on the n // 2 + 1 non-negative frequencies (onesided) or
  all of them (extended by Hermitian symmetry). Even-length rows along the tensor's last dim are transformed as
  n // 2 complex pairs (half the work, and the input buffer read as it is); others as complex numbers with
  imaginary part 0.
- c2r: the other dims inverse-transformed, then the last: as n // 2 pairs where r2c would use them, else
  extended to ``last_dim_size`` entries by Hermitian symmetry and its real part kept. Both ignore the imaginary
  parts of the zero and Nyquist frequencies, as pocketfft's c2r does.
"""
from __future__ import annotations

import math

from .. import strided
from ..array import CLArray, empty
from ..cltypes import STORAGE_CTYPE
from .fft_axis import transform, twiddles
from .fft_kernels import COMPLEX, REAL, hermitian_kernel, pairs_spectrum_kernel, real_spectrum_kernel
from .shapes import clone


def _fft_c2c(input: CLArray, dim, normalization: int, forward: bool) -> CLArray:
    dims = _dims(dim, input.ndim)
    if input.size == 0:
        return empty(input.runtime, input.shape, input.dtype)
    return _along(_contiguous(input), dims, forward, _scale(normalization, [input.shape[d] for d in dims]))


def _fft_r2c(input: CLArray, dim, normalization: int, onesided: bool) -> CLArray:
    dims = _dims(dim, input.ndim)
    last, others = dims[-1], dims[:-1]
    n = input.shape[last]
    shape = _with(input.shape, last, n // 2 + 1 if onesided else n)
    if input.size == 0:
        return empty(input.runtime, shape, COMPLEX[input.dtype])
    scale = _scale(normalization, [input.shape[d] for d in dims])
    last_scale = 1.0 if others else scale
    if _as_pairs(input, last):
        x = _real_spectrum(_contiguous(input), last_scale)
        if not onesided:
            x = _hermitian(x, last, n)
    else:
        complex_dtype = COMPLEX[input.dtype]
        pairs = strided.run(input.runtime, f"({STORAGE_CTYPE[complex_dtype]})(x0, 0)", [input], complex_dtype)
        x = transform(pairs, last, True, last_scale)
        if onesided:
            x = clone(x.view_as(shape, x.strides))
    return _along(x, others, True, scale) if others else x


def _fft_c2r(input: CLArray, dim, normalization: int, last_dim_size: int) -> CLArray:
    dims = _dims(dim, input.ndim)
    last, others = dims[-1], dims[:-1]
    shape = _with(input.shape, last, last_dim_size)
    if math.prod(shape) == 0:
        return empty(input.runtime, shape, REAL[input.dtype])
    scale = _scale(normalization, [shape[d] for d in dims])
    x = _along(_contiguous(input), others, False, 1.0) if others else _contiguous(input)
    if _as_pairs(x, last, last_dim_size) and x.shape[last] > last_dim_size // 2:  # (the bins up to n // 2 given)
        return _real_signal(x, last_dim_size, scale)
    spectrum = transform(_hermitian(x, last, last_dim_size), last, False, scale)
    return strided.run(input.runtime, "x0.x", [spectrum], REAL[input.dtype])


def _as_pairs(x: CLArray, axis: int, length: int | None = None) -> bool:
    """Whether real signals of ``length`` (default: ``x``'s) along ``axis`` are transformed as complex ones of half
    the length: where they have an even length and lie along the last dim."""
    length = x.shape[axis] if length is None else length
    return axis == x.ndim - 1 and length % 2 == 0


def _real_spectrum(x: CLArray, scale: float) -> CLArray:
    """The first n // 2 + 1 entries of the spectra of ``x``'s (contiguous, real) rows of even length n, from the
    transform of its buffer read as n // 2 complex pairs."""
    runtime, n = x.runtime, x.shape[-1]
    complex_dtype = COMPLEX[x.dtype]
    pairs = CLArray(runtime, x.buffer, x.shape[:-1] + (n // 2,), complex_dtype)
    z = transform(pairs, x.ndim - 1, True)
    out = empty(runtime, x.shape[:-1] + (n // 2 + 1,), complex_dtype)
    runtime.launch_rows(real_spectrum_kernel(runtime, complex_dtype), n // 2 + 1, x.size // n, z.buffer,
                        twiddles(runtime, n, complex_dtype).buffer, out.buffer, n // 2 + 1, n // 2, scale)
    return out


def _real_signal(x: CLArray, n: int, scale: float) -> CLArray:
    """Real rows of even length ``n`` from the first n // 2 + 1 entries of their spectra (``x``'s contiguous rows):
    the inverse transform of n // 2 points whose complex pairs are the signal's samples."""
    runtime, given = x.runtime, x.shape[-1]
    rows = x.size // given
    z = empty(runtime, x.shape[:-1] + (n // 2,), x.dtype)
    runtime.launch_rows(pairs_spectrum_kernel(runtime, x.dtype), n // 2, rows, x.buffer,
                        twiddles(runtime, n, x.dtype).buffer, z.buffer, n // 2, given, 1.0)
    signal = transform(z, x.ndim - 1, False, scale)
    return CLArray(runtime, signal.buffer, x.shape[:-1] + (n,), REAL[x.dtype])


def _along(x: CLArray, dims: list[int], forward: bool, scale: float) -> CLArray:
    """``x`` transformed along each of ``dims``, ``scale`` applied by the last; a new array (a copy for none)."""
    if not dims:
        return strided.run(x.runtime, "x0 * x1", [x, strided.Scalar(scale, REAL[x.dtype])], x.dtype)
    for position, axis in enumerate(dims):
        x = transform(x, axis, forward, scale if position == len(dims) - 1 else 1.0)
    return x


def _hermitian(x: CLArray, axis: int, length: int) -> CLArray:
    """``x`` (the first entries of spectra along ``axis``) extended to the full ``length`` entries."""
    half = x.shape[axis]
    rows, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1:])
    out = empty(x.runtime, _with(x.shape, axis, length), x.dtype)
    x.runtime.launch_rows(hermitian_kernel(x.runtime, x.dtype), length * inner, rows, x.buffer, out.buffer,
                          length * inner, half, length, inner)
    return out


def _dims(dim, ndim: int) -> list[int]:
    return [d % ndim for d in dim] if ndim else []


def _scale(normalization: int, sizes: list[int]) -> float:
    """The factor of ``normalization`` (validated by the op): 0 none, 1 1/sqrt(prod n), 2 1/prod n."""
    count = math.prod(sizes)
    return (1.0, 1.0 / math.sqrt(count), 1.0 / count)[normalization]


def _with(shape: tuple, axis: int, size: int) -> tuple:
    return shape[:axis] + (size,) + shape[axis + 1:]


def _contiguous(x: CLArray) -> CLArray:
    """``x`` itself where the kernels can read it as a dense row-major array, else a contiguous copy."""
    return x if x.offset == 0 and x.is_contiguous() else clone(x)


KERNELS = {"_fft_c2c": _fft_c2c, "_fft_r2c": _fft_r2c, "_fft_c2r": _fft_c2r}
