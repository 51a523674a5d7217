"""OpenCL indexing and sorting kernels where the conformance samples are too small to reach them:
sorts longer than one work-group's chunk (the global merge passes), argwhere over many work-groups,
index_put_ with many repeated positions on both of its paths, and kernels reused across shapes.
Skipped, with the reason, where no OpenCL device works.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

STATUS = ember.backends.available().get("opencl", "unavailable: not registered")
pytestmark = pytest.mark.skipif(STATUS != "available", reason=f"opencl {STATUS}")


def device(x, dtype=None):
    x = np.asarray(x)
    return ember.tensor(x.reshape(-1), dtype=dtype, device="opencl").reshape(x.shape)


def host(t):
    return t.cpu().numpy()


def runtime():
    from ember.backends.opencl.backend import runtime_of
    return runtime_of(0)


def stable_order(x, axis, descending):
    """NumPy's stable argsort with NaN last ascending and first descending, ties in original order."""
    if not descending:
        return np.argsort(x, axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(np.argsort(np.flip(x, axis), axis, kind="stable"), axis)


@pytest.mark.parametrize("length", [2047, 2048, 2049, 9000])
@pytest.mark.parametrize("descending", [False, True])
def test_long_rows_sort_stably_across_chunks(length, descending):
    rng = np.random.default_rng(length)
    x = rng.integers(-3, 4, (3, length)).astype(np.float32)  # many ties
    x[rng.random(x.shape) < 0.05] = np.nan
    x[rng.random(x.shape) < 0.05] = -0.0
    x[0, :5] = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    values, indices = ember.sort(device(x).t(), 0, descending)  # non-contiguous, sorted along dim 0
    order = stable_order(x, 1, descending)
    np.testing.assert_array_equal(host(indices), order.T)
    np.testing.assert_array_equal(host(values), np.take_along_axis(x, order, 1).T)


@pytest.mark.parametrize("dtype", [ember.bool, ember.uint8, ember.int8, ember.int64, ember.float64])
def test_long_sort_of_every_kind_of_dtype(dtype):
    if dtype not in ember.backends.registered()["opencl"].supported_dtypes(0):
        pytest.skip(f"opencl:0 lacks {dtype.name}")
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, 5000)
    x = (x > 0) if dtype is ember.bool else x
    t = device(x, dtype)
    values, indices = ember.sort(t, 0, True)
    expected = np.asarray(host(t))
    order = stable_order(expected, 0, True)
    np.testing.assert_array_equal(host(indices), order)
    np.testing.assert_array_equal(host(values), expected[order])


def test_argwhere_over_many_work_groups_in_row_major_order():
    rng = np.random.default_rng(2)
    x = rng.random((7, 3001, 5)) < 0.3
    t = device(x.transpose(1, 0, 2).copy()).permute(1, 0, 2)  # non-contiguous
    np.testing.assert_array_equal(host(ember.argwhere(t)), np.argwhere(x))
    assert tuple(ember.argwhere(device(np.zeros((4, 0)))).shape) == (0, 2)
    assert tuple(ember.argwhere(device(np.float32(3))).shape) == (1, 0)


def _put_reference(x, index, values, accumulate):
    """x[index] (+)= values, one position after another in row-major order."""
    out = x.copy()
    values = np.broadcast_to(values, index.shape + x.shape[1:])
    for position in np.ndindex(index.shape):
        if accumulate:
            out[index[position]] += values[position]
        else:
            out[index[position]] = values[position]
    return out


@pytest.mark.parametrize("sorted_path", [False, True])
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_many_repeats_is_deterministic(sorted_path, accumulate, monkeypatch):
    from ember.backends.opencl.kernels import indexing
    monkeypatch.setattr(indexing, "FORCE_SORTED_PUT", sorted_path)
    monkeypatch.setattr(indexing, "SORTED_PUT_MIN", 1)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 6)).astype(np.float32)
    index = rng.integers(0, 40, (700, 9))  # every row named ~150 times
    values = rng.standard_normal((9, 6)).astype(np.float32)
    t = device(x)
    ember.index_put_(t, [device(index)], device(values), accumulate)
    expected = _put_reference(x, index, values, accumulate)
    np.testing.assert_array_equal(host(t), expected)  # bit for bit: the same order of additions


def test_scatter_add_sums_repeats_in_order():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    index = rng.integers(0, 5, (3, 400))
    src = rng.standard_normal((3, 400)).astype(np.float32)
    expected = x.copy()
    for i in range(3):
        for j in range(400):
            expected[i, index[i, j]] += src[i, j]
    np.testing.assert_array_equal(host(ember.scatter_add(device(x), 1, device(index), device(src))), expected)
    last = x.copy()
    for i in range(3):
        for j in range(400):
            last[i, index[i, j]] = src[i, j]
    np.testing.assert_array_equal(host(ember.scatter(device(x), 1, device(index), device(src))), last)


def test_indexing_kernels_are_reused_across_shapes():
    def run(rows, columns):
        x = ember.arange(float(rows * columns), device="opencl").reshape(rows, columns)
        index = ember.arange(columns - 1, -1, -1, device="opencl")
        results = [ember.gather(x, 1, ember.reshape(index, (1, columns)).expand(rows, columns)), x[:, index],
                   *ember.sort(x, 1, True), ember.argwhere(x), ember.flip(x, (0, 1)),
                   ember.index_put_(x, [None, index], ember.zeros((), device="opencl"))]
        return [host(r) for r in results]
    run(3, 4), run(2, 2500)  # short rows, and rows long enough for the sort's merge passes
    built = set(runtime().programs.kernels)
    first, second = run(5, 7), run(2, 3000)
    # new sizes compile nothing new, but at most a built kernel's twin without range checks, once per kernel
    added = set(runtime().programs.kernels) - built
    assert all(options == "-D EMBER_EXACT_RANGE" and (source, name, "") in built for source, name, options in added)
    assert first[0][0, 0] == 6 and second[0][1, 0] == 5999
