"""The OpenCL FFT (``backends/opencl/kernels/fft*.py``): the three transform primitives against NumPy's
``np.fft`` (in double precision, the results copied out afterwards), for power-of-two lengths (Stockham) and
others (Bluestein), batched, along any dim, several dims, every normalization, complex64 and complex128.
The kernels are called directly, so these hold whether or not ``ember.fft`` exists yet; the last tests go
through the dispatcher and ``ember.fft`` where they exist. Skipped, with the reason, where no OpenCL device works.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

STATUS = ember.backends.available().get("opencl", "unavailable: not registered")
pytestmark = pytest.mark.skipif(STATUS != "available", reason=f"opencl {STATUS}")

SIZES = [1, 2, 3, 5, 8, 12, 17, 64, 100, 1024, 4096]
COMPLEX = [np.complex64, np.complex128]
#: largest error allowed, relative to the largest magnitude of the reference
TOLERANCE = {np.dtype(np.complex64): 2e-6, np.dtype(np.complex128): 1e-12,
             np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-12}
FORWARD_NORM = ("backward", "ortho", "forward")  # normalization 0, 1, 2 as NumPy's norm of a forward transform
INVERSE_NORM = ("forward", "ortho", "backward")


def backend():
    return ember.backends.registered()["opencl"]


def kernel(name: str):
    return backend().kernels[name]


def to_device(x: np.ndarray):
    from ember.backends.opencl.cltypes import EMBER_DTYPE
    return backend().from_numpy(np.ascontiguousarray(x), EMBER_DTYPE[x.dtype], 0)


def to_host(a) -> np.ndarray:
    return backend().to_numpy(a)


def supports(dtype) -> bool:
    from ember.backends.opencl.cltypes import EMBER_DTYPE
    return EMBER_DTYPE[np.dtype(dtype)] in backend().supported_dtypes(0)


def complex_sample(shape, dtype, seed=0) -> np.ndarray:
    if not supports(dtype):
        pytest.skip(f"the device has no {np.dtype(dtype)}")
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def real_sample(shape, dtype, seed=0) -> np.ndarray:
    if not supports(dtype):
        pytest.skip(f"the device has no {np.dtype(dtype)}")
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def assert_matches(got: np.ndarray, expected: np.ndarray, dtype) -> None:
    assert got.shape == expected.shape and got.dtype == np.dtype(dtype)
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-30)
    error = float(np.abs(got - expected).max(initial=0.0)) / scale
    assert error <= TOLERANCE[np.dtype(dtype)], f"relative error {error:.3g}"


def c2c(x, dim, normalization, forward):
    return to_host(kernel("_fft_c2c")(to_device(x), list(dim), normalization, forward))


def reference_c2c(x, dim, normalization, forward):
    transform = np.fft.fftn if forward else np.fft.ifftn
    norm = (FORWARD_NORM if forward else INVERSE_NORM)[normalization]
    return transform(x.astype(np.complex128), axes=dim, norm=norm)


# -- complex to complex -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_1d_batched(n, dtype, forward):
    x = complex_sample((3, n), dtype)
    assert_matches(c2c(x, (1,), 0, forward), reference_c2c(x, (1,), 0, forward), dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_normalizations_over_several_dims(normalization, forward, dtype):
    x = complex_sample((4, 3, 12, 5), dtype)
    for dim in [(0, 2), (3, 1, 0), (2,)]:
        assert_matches(c2c(x, dim, normalization, forward), reference_c2c(x, dim, normalization, forward), dtype)


@pytest.mark.parametrize("n", [2, 17, 64, 100])
def test_c2c_along_a_middle_dim_and_negative_dims(n):
    x = complex_sample((2, n, 3), np.complex64)
    assert_matches(c2c(x, (-2,), 0, True), reference_c2c(x, (1,), 0, True), np.complex64)
    assert_matches(c2c(x, (0, -1), 1, False), reference_c2c(x, (0, 2), 1, False), np.complex64)


def test_c2c_reads_strided_and_offset_inputs_and_leaves_them_alone():
    x = complex_sample((6, 10), np.complex64)
    device = to_device(x)
    transposed = kernel("permute")(device, (1, 0))
    window = kernel("slice")(device, 1, 2, 10, 1)  # an offset, non-contiguous view
    assert_matches(to_host(kernel("_fft_c2c")(transposed, [0, 1], 0, True)),
                   reference_c2c(x.T, (0, 1), 0, True), np.complex64)
    assert_matches(to_host(kernel("_fft_c2c")(window, [1], 2, True)),
                   reference_c2c(x[:, 2:], (1,), 2, True), np.complex64)
    np.testing.assert_array_equal(to_host(device), x)


@pytest.mark.parametrize("n", [1 << 16, 4099])
def test_c2c_float32_accuracy_at_large_sizes(n):
    """Twiddles and chirps come from double-precision phases (where the device has fp64), so a 2**16 transform
    and a prime-length one stay within about 1e-5 of pocketfft's accuracy, relative to the largest value."""
    x = complex_sample((n,), np.complex64)
    expected = reference_c2c(x, (0,), 0, True)
    error = np.abs(c2c(x, (0,), 0, True) - expected).max() / np.abs(expected).max()
    assert error < 1e-5


def test_c2c_roundtrip_and_empty_batch():
    x = complex_sample((5, 100), np.complex64)
    spectrum = kernel("_fft_c2c")(to_device(x), [1], 0, True)
    assert_matches(to_host(kernel("_fft_c2c")(spectrum, [1], 2, False)), x.astype(np.complex128), np.complex64)
    empty = kernel("_fft_c2c")(to_device(np.zeros((0, 8), np.complex64)), [1], 0, True)
    assert to_host(empty).shape == (0, 8)


# -- real to complex and back -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_r2c_onesided_and_c2r_1d(n, dtype):
    x = real_sample((4, n), dtype)
    complex_dtype = np.result_type(dtype, np.complex64)
    spectrum = to_host(kernel("_fft_r2c")(to_device(x), [1], 0, True))
    assert_matches(spectrum, np.fft.rfft(x.astype(np.float64), axis=1), complex_dtype)
    signal = to_host(kernel("_fft_c2r")(to_device(spectrum), [1], 2, n))
    assert_matches(signal, np.fft.irfft(spectrum.astype(np.complex128), n, axis=1), dtype)


@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("last", [7, 8])
def test_r2c_and_c2r_over_several_dims(normalization, last):
    x = real_sample((3, 5, last), np.float32)
    for dim in [(0, 2), (2, 1), (1, 0, 2)]:
        onesided = to_host(kernel("_fft_r2c")(to_device(x), list(dim), normalization, True))
        expected = np.fft.rfftn(x.astype(np.float64), axes=dim, norm=FORWARD_NORM[normalization])
        assert_matches(onesided, expected, np.complex64)
        two_sided = to_host(kernel("_fft_r2c")(to_device(x), list(dim), normalization, False))
        assert_matches(two_sided, np.fft.fftn(x.astype(np.float64), axes=dim, norm=FORWARD_NORM[normalization]),
                       np.complex64)
        size = x.shape[dim[-1]]
        sizes = [x.shape[d] for d in dim[:-1]] + [size]
        signal = to_host(kernel("_fft_c2r")(to_device(onesided), list(dim), normalization, size))
        expected_signal = np.fft.irfftn(onesided.astype(np.complex128), s=sizes, axes=dim,
                                        norm=INVERSE_NORM[normalization])
        assert_matches(signal, expected_signal, np.float32)


def test_c2r_ignores_the_imaginary_parts_of_zero_and_nyquist_bins_as_pocketfft_does():
    for n in (6, 7):
        spectrum = complex_sample((2, n // 2 + 1), np.complex128)
        got = to_host(kernel("_fft_c2r")(to_device(spectrum), [1], 0, n))
        assert_matches(got, np.fft.irfft(spectrum, n, axis=1, norm="forward"), np.float64)


def test_r2c_of_a_strided_input():
    x = real_sample((12, 9), np.float32)
    transposed = kernel("permute")(to_device(x), (1, 0))
    got = to_host(kernel("_fft_r2c")(transposed, [0, 1], 1, True))
    assert_matches(got, np.fft.rfftn(x.T.astype(np.float64), axes=(0, 1), norm="ortho"), np.complex64)


# -- through the dispatcher and ember.fft -------------------------------------------------------------------

def test_the_ops_on_opencl_match_cpu_values_and_gradients():
    """Values of the three ops, and the gradients of c2c and c2r (the adjoint transforms, run on the device),
    as the CPU's pocketfft gives them."""
    from ember.dispatch.ops import F
    if not hasattr(F, "_fft_r2c"):
        pytest.skip("the FFT ops are not declared")
    signal = real_sample((3, 10), np.float64)
    spectrum = complex_sample((3, 6), np.complex128, seed=1)
    grads = (complex_sample((3, 6), np.complex128, seed=2), real_sample((3, 10), np.float64, seed=3))
    results = {}
    for device in ("cpu", "opencl"):
        x = ember.tensor(spectrum, device=device, requires_grad=True)
        c2c = F._fft_c2c(x, [0, 1], 1, False)
        c2c.backward(ember.tensor(grads[0], device=device))
        c2c_grad, x.grad = x.grad, None
        c2r = F._fft_c2r(x, [0, 1], 2, 10)
        c2r.backward(ember.tensor(grads[1], device=device))
        r2c = F._fft_r2c(ember.tensor(signal, device=device), [1, 0], 0, True)
        results[device] = [t.detach().cpu().numpy() for t in (c2c, c2c_grad, c2r, x.grad, r2c)]
    for cpu, opencl in zip(results["cpu"], results["opencl"]):
        assert opencl.dtype == cpu.dtype
        np.testing.assert_allclose(opencl, cpu, rtol=1e-10, atol=1e-10)


def test_ember_fft_functions_on_opencl():
    fft = getattr(ember, "fft", None)
    if fft is None or not hasattr(fft, "rfft"):
        pytest.skip("ember.fft is not there yet")
    x = complex_sample((4, 12), np.complex64)
    r = real_sample((4, 12), np.float32)
    assert_matches(fft.fft(ember.tensor(x, device="opencl")).cpu().numpy(), np.fft.fft(x.astype(np.complex128)),
                   np.complex64)
    assert_matches(fft.ifft2(ember.tensor(x, device="opencl"), norm="ortho").cpu().numpy(),
                   np.fft.ifft2(x.astype(np.complex128), norm="ortho"), np.complex64)
    assert_matches(fft.rfft(ember.tensor(r, device="opencl"), n=9).cpu().numpy(),
                   np.fft.rfft(r.astype(np.float64), n=9), np.complex64)
    assert_matches(fft.irfft(ember.tensor(x, device="opencl"), n=21).cpu().numpy(),
                   np.fft.irfft(x.astype(np.complex128), n=21), np.float32)
