"""Complex storage on OpenCL: host copies, casts to and from real dtypes, fills, strided copies, joins,
indexing and padding, for 8- and 16-byte elements (float2/double2 pairs), against NumPy. The kernels are
called directly (``OpenCLBackend.kernels`` on CLArrays), so these hold whether or not an op's schema has
enabled complex yet. Skipped, with the reason, where no OpenCL device works.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

STATUS = ember.backends.available().get("opencl", "unavailable: not registered")
pytestmark = pytest.mark.skipif(STATUS != "available", reason=f"opencl {STATUS}")

COMPLEX = [np.complex64, np.complex128]


def backend():
    return ember.backends.registered()["opencl"]


def kernels():
    return backend().kernels


def to_device(x):
    x = np.asarray(x)
    return backend().from_numpy(x, _ember(x.dtype), 0)


def to_host(a):
    return backend().to_numpy(a)


def _ember(dtype):
    from ember.backends.opencl.cltypes import EMBER_DTYPE
    return EMBER_DTYPE[np.dtype(dtype)]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def skip_without(dtype):
    if _ember(dtype) not in backend().supported_dtypes(0):
        pytest.skip(f"the device has no {np.dtype(dtype)}")


def test_supported_dtypes_list_complex_with_their_components():
    supported = backend().supported_dtypes(0)
    assert ember.complex64 in supported
    assert (ember.complex128 in supported) == (ember.float64 in supported)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_host_round_trip_and_strided_copy(dtype):
    skip_without(dtype)
    x = sample((3, 5), dtype)
    a = to_device(x)
    assert to_host(a).dtype == dtype
    np.testing.assert_array_equal(to_host(a), x)
    transposed = kernels()["permute"](a, (1, 0))
    np.testing.assert_array_equal(to_host(transposed), x.T)
    sliced = kernels()["slice"](a, 1, 1, 5, 2)
    np.testing.assert_array_equal(to_host(kernels()["clone"](sliced)), x[:, 1:5:2])


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("real", [np.bool_, np.uint8, np.int32, np.int64, np.float32, np.float64])
def test_casts_between_real_and_complex_match_numpy(dtype, real):
    skip_without(dtype)
    skip_without(real)
    x = np.array([1.5 - 2j, 0j, 3.25 + 0j, 0 + 1j, 200.75 + 7j], dtype=dtype)
    expected = ember.tensor(x).to(_ember(real)).numpy()  # the CPU backend's cast is the reference
    got = to_host(kernels()["to_dtype"](to_device(x), _ember(real)))
    np.testing.assert_array_equal(got, expected)
    r = np.array([1, 0, 3, 7, 100]).astype(real)
    got = to_host(kernels()["to_dtype"](to_device(r), _ember(dtype)))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, r.astype(dtype))


def test_complex_precision_casts_keep_both_parts():
    skip_without(np.complex128)
    x = sample((7,), np.complex128)
    narrow = kernels()["to_dtype"](to_device(x), ember.complex64)
    np.testing.assert_array_equal(to_host(narrow), x.astype(np.complex64))
    wide = kernels()["to_dtype"](narrow, ember.complex128)
    np.testing.assert_array_equal(to_host(wide), x.astype(np.complex64).astype(np.complex128))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_copy_into_a_view_converts_the_source(dtype):
    skip_without(dtype)
    target = to_device(np.zeros((2, 4), dtype))
    column = kernels()["slice"](target, 1, 1, 2, 1)
    kernels()["copy_"](column, to_device(np.array([[2.5], [-1.0]], np.float32)))
    expected = np.zeros((2, 4), dtype)
    expected[:, 1] = [2.5, -1.0]
    np.testing.assert_array_equal(to_host(target), expected)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_full_fills_both_parts(dtype):
    skip_without(dtype)
    got = to_host(kernels()["full"]((2, 3), 1.5 - 0.25j, _ember(dtype), 0))
    np.testing.assert_array_equal(got, np.full((2, 3), 1.5 - 0.25j, dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_cat_flip_and_pad(dtype):
    skip_without(dtype)
    x, y = sample((2, 3), dtype, 1), sample((2, 2), dtype, 2)
    joined = kernels()["cat"]([to_device(x), to_device(y)], 1)
    np.testing.assert_array_equal(to_host(joined), np.concatenate([x, y], 1))
    np.testing.assert_array_equal(to_host(kernels()["flip"](to_device(x), [0, 1])), x[::-1, ::-1])
    padded = kernels()["pad"](to_device(x), (1, 2), "constant", 0.0)
    np.testing.assert_array_equal(to_host(padded), np.pad(x, ((0, 0), (1, 2))))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_gather_scatter_and_scatter_add(dtype):
    skip_without(dtype)
    x = sample((3, 4), dtype)
    index = np.array([[0, 2, 2, 1], [1, 0, 0, 0]])
    got = to_host(kernels()["gather"](to_device(x), 0, to_device(index)))
    np.testing.assert_array_equal(got, np.take_along_axis(x, index, 0))
    src = sample((2, 4), dtype, 3)
    scattered = to_host(kernels()["scatter"](to_device(x), 0, to_device(index), to_device(src)))
    expected = x.copy()
    np.put_along_axis(expected, index, src, 0)
    np.testing.assert_array_equal(scattered, expected)
    added = to_host(kernels()["scatter_add"](to_device(x), 0, to_device(index), to_device(src)))
    expected = x.copy()
    for i in range(2):
        for j in range(4):
            expected[index[i, j], j] += src[i, j]
    np.testing.assert_allclose(added, expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("positions", [5, 3000])  # few index positions, and the sorted path
def test_index_and_index_put(dtype, positions):
    skip_without(dtype)
    x = sample((6, 3), dtype)
    rows = np.random.default_rng(4).integers(0, 6, positions)
    got = to_host(kernels()["index"](to_device(x), [to_device(rows)]))
    np.testing.assert_array_equal(got, x[rows])
    values = sample((positions, 3), dtype, 5)
    target = to_device(x)
    kernels()["index_put_"](target, [to_device(rows)], to_device(values), True)
    expected = x.copy()
    np.add.at(expected, rows, values)
    np.testing.assert_allclose(to_host(target), expected, rtol=1e-5)
    np.testing.assert_array_equal(to_host(kernels()["index_select"](to_device(x), 0, to_device(rows[:4]))),
                                  x[rows[:4]])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_argwhere_counts_either_part(dtype):
    skip_without(dtype)
    x = np.array([[0, 1j], [2, 0], [0, 3 + 1j]], dtype)
    np.testing.assert_array_equal(to_host(kernels()["argwhere"](to_device(x))), np.argwhere(x))
