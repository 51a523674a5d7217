"""The discrete Fourier transform primitives (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``) on pocketfft or cuFFT.

NumPy arrays go to ``scipy.fft`` (pocketfft): unlike ``numpy.fft`` it keeps single precision, so complex64 stays
complex64. CuPy arrays go to ``cupy.fft`` (cuFFT), which keeps it too. An op's ``normalization`` (0: none,
1: 1/sqrt(n), 2: 1/n, n the product of the signal sizes) is the ``norm`` keyword both libraries take, named for
the direction of the transform: "backward" scales only inverses, "forward" only forward transforms.
"""
from __future__ import annotations

from .library import ArrayLib

#: normalization -> the ``norm`` that scales a forward transform so
FORWARD_NORM = ("backward", "ortho", "forward")
#: normalization -> the ``norm`` that scales an inverse transform so
INVERSE_NORM = ("forward", "ortho", "backward")


def _fft_module(lib: ArrayLib):
    """The library's FFT functions: SciPy's for NumPy (single precision kept), the library's own otherwise."""
    if lib.name == "numpy":
        import scipy.fft
        return scipy.fft
    return lib.xp.fft


def _cpu_threads() -> int:
    """The threads Ember's CPU kernels compute with: numba's pool, which ``ember.set_num_threads`` sizes (pocketfft
    runs batched and n-d transforms on that many: 2-d 512 x 512 complex64 in 1.7 ms instead of 2.5 on 2 cores)."""
    try:
        import numba
    except ImportError:
        return 1
    return numba.get_num_threads()


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    fft = _fft_module(lib)
    threaded = {"workers": _cpu_threads} if lib.name == "numpy" else {}

    def options(norm: str) -> dict:
        return {"norm": norm, **{k: v() for k, v in threaded.items()}}

    def _resized(a, dim, size, dtype):
        """``a``'s shape with ``dim`` of ``size``, zeros: the result of a transform of an empty batch, which
        the libraries may refuse."""
        return xp.zeros(a.shape[:dim] + (size,) + a.shape[dim + 1:], dtype=dtype)

    def _c2c(a, dim, normalization, forward):
        if a.size == 0:
            return xp.zeros(a.shape, dtype=a.dtype)
        if forward:
            return fft.fftn(a, axes=dim, **options(FORWARD_NORM[normalization]))
        return fft.ifftn(a, axes=dim, **options(INVERSE_NORM[normalization]))

    def _r2c(a, dim, normalization, onesided):
        complex_dtype = xp.result_type(a.dtype, xp.complex64)
        last = dim[-1]
        if a.size == 0:
            return _resized(a, last, a.shape[last] // 2 + 1 if onesided else a.shape[last], complex_dtype)
        if onesided:
            return fft.rfftn(a, axes=dim, **options(FORWARD_NORM[normalization]))
        return fft.fftn(a.astype(complex_dtype), axes=dim, **options(FORWARD_NORM[normalization]))

    def _c2r(a, dim, normalization, last_dim_size):
        if a.size == 0:
            return _resized(a, dim[-1], last_dim_size, a.real.dtype)
        sizes = [a.shape[d] for d in dim[:-1]] + [last_dim_size]
        return fft.irfftn(a, s=sizes, axes=dim, **options(INVERSE_NORM[normalization]))

    return {"_fft_c2c": _c2c, "_fft_r2c": _r2c, "_fft_c2r": _c2r}
