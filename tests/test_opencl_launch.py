"""The OpenCL runtime's launch shapes against NumPy: exact launches (kernels without their range check),
rounded-up ones, 2-d ranges of rows, one-work-item-per-output reductions and the CPU GEMM's blocks, at
sizes on both sides of every work-group boundary. Skipped where no OpenCL device works."""
from __future__ import annotations

import numpy as np
import pytest

import ember

if ember.backends.available().get("opencl") != "available":
    pytest.skip(f"opencl: {ember.backends.available().get('opencl')}", allow_module_level=True)

SIZES = [1, 7, 15, 16, 17, 100, 255, 256, 257, 1000, 4096, 4100]


def opencl(array: np.ndarray):
    return ember.tensor(array, device="opencl")


def host(t) -> np.ndarray:
    return t.cpu().numpy()


def runtime():
    from ember.backends.opencl.runtime import runtime_of
    return runtime_of(0)


@pytest.mark.parametrize("n", SIZES)
def test_elementwise_every_size(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(host(opencl(a) * opencl(b) + 1), a * b + 1, rtol=1e-6)
    np.testing.assert_array_equal(host(opencl(a) > 0), a > 0)


@pytest.mark.parametrize("inner", [16, 17, 100, 256, 300, 1024])
def test_rows_broadcast_and_strided(inner):
    """Rank-2 merged shapes run over a 2-d range: broadcast rows, transposed and sliced operands."""
    rng = np.random.default_rng(inner)
    x = rng.standard_normal((5, inner)).astype(np.float32)
    bias = rng.standard_normal(inner).astype(np.float32)
    np.testing.assert_allclose(host((opencl(x) + opencl(bias)).relu()), np.maximum(x + bias, 0), rtol=1e-6)
    wide = rng.standard_normal((inner, 12)).astype(np.float32)
    np.testing.assert_allclose(host(opencl(wide).t()[:, ::2] * 2), wide.T[:, ::2] * 2, rtol=1e-6)
    cube = rng.standard_normal((3, 4, inner)).astype(np.float32)
    np.testing.assert_allclose(host(opencl(cube)[:, 1:] - opencl(cube[0, 0])), cube[:, 1:] - cube[0, 0], rtol=1e-6)


def test_rows_choice_follows_the_innermost_dim():
    from ember.backends.opencl.strided import by_rows
    r = runtime()
    assert by_rows(r, (4, r.min_exact_group))
    assert not by_rows(r, (4, r.min_exact_group - 1))
    assert not by_rows(r, (4096,))


def test_exact_groups_divide_and_stay_in_range():
    r = runtime()
    for n in SIZES + [200704, 3 * 7 * 11]:
        group = r._exact_group(n)
        if group:
            assert n % group == 0 and r.min_exact_group <= group <= r.max_group and group in r.group_sizes
        else:
            assert all(n % g for g in r.group_sizes if g >= r.min_exact_group)


def test_a_cpu_device_launches_with_two_work_group_sizes():
    """PoCL compiles a kernel once per work-group size: on a CPU device every launch takes one of two."""
    r = runtime()
    if not r.is_cpu:
        pytest.skip("the device is a GPU: every power of two")
    chosen = {r.covering_group(n) for n in range(1, 1100)} | {r._exact_group(n) for n in range(1, 1100)} - {0}
    assert chosen == {r.min_exact_group, r.max_group}


@pytest.mark.parametrize("shape,dim", [((128, 256), 0), ((128, 10), 1), ((3, 40, 50), (0, 2)), ((1000,), 0),
                                       ((64, 33), 0), ((33, 64), 1)])
def test_reductions_per_output_and_tree(shape, dim):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    t = opencl(x)
    np.testing.assert_allclose(host(t.sum(dim)), x.sum(dim), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(host(t.amax(dim)), x.max(dim))
    if isinstance(dim, int):
        np.testing.assert_array_equal(host(t.argmin(dim)), x.argmin(dim))


@pytest.mark.parametrize("m,k,n", [(1, 5, 3), (6, 16, 16), (7, 17, 33), (13, 64, 10), (16, 10, 17), (128, 784, 40),
                                   (50, 65, 129)])
def test_gemm_blocks_and_packing(m, k, n):
    """Blocks of 6 rows (edge blocks clamp), packing of B in work-groups of k (K not a multiple of them)."""
    rng = np.random.default_rng(m * k * n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    np.testing.assert_allclose(host(opencl(a) @ opencl(b).t()), a @ b.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(host(opencl(a.T.copy()).t() @ opencl(b.T.copy())), a @ b.T, rtol=1e-4, atol=1e-4)
