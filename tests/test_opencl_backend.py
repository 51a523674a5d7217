"""OpenCL-specific behaviour that the backend-generic conformance suite does not cover: device
enumeration and capabilities, the compiled-program cache, buffers shared by views, memory
statistics, integer division by zero, and both GEMMs (the GPU tiling runs here on PoCL too).
Skipped, with the reason, where no OpenCL device works.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

STATUS = ember.backends.available().get("opencl", "unavailable: not registered")
pytestmark = pytest.mark.skipif(STATUS != "available", reason=f"opencl {STATUS}")


def backend():
    return ember.backends.registered()["opencl"]


def runtime():
    from ember.backends.opencl.backend import runtime_of
    return runtime_of(0)


def test_devices_are_numbered_and_out_of_range_is_an_error():
    count = backend().device_count()
    assert count >= 1
    assert ember.zeros(1, device="opencl").device == ember.device("opencl", 0)
    with pytest.raises(ember.DeviceError, match=rf"opencl:{count} does not exist"):
        ember.zeros(1, device=f"opencl:{count}")


def test_missing_dtype_is_a_clear_error():
    supported = backend().supported_dtypes(0)
    assert ember.bfloat16 not in supported  # OpenCL C has no bfloat16
    with pytest.raises(ember.DtypeError, match=r"opencl:0 does not support bfloat16"):
        ember.ones(2, dtype=ember.bfloat16, device="opencl")
    assert (ember.float64 in supported) == runtime().fp64
    assert (ember.float16 in supported) == runtime().fp16


def test_no_kernel_is_compiled_twice():
    x = ember.arange(10.0, device="opencl")
    (x * 3 + 1).tanh().sum().item()
    compiled = runtime().programs.compiled
    y = ember.arange(37.0, device="opencl")[::2]  # another size, offset and stride: shapes are arguments
    (y * 3 + 1).tanh().sum().item()
    assert runtime().programs.compiled == compiled


def test_a_program_without_the_asked_kernel_is_a_clear_error():
    """A compiler that reports success but produces no kernel (seen with PoCL and 512-bit vectors on an
    AVX2 target) must surface as an error naming the kernel, not as a bare PyOpenCL lookup failure."""
    with pytest.raises(ember.BackendError, match=r"built no kernel ember_absent"):
        runtime().programs.kernel("__kernel void ember_present(__global float *x) { x[0] = 1; }", "ember_absent")


def test_views_share_the_buffer():
    x = ember.zeros(3, 4, device="opencl")
    column = x[:, 1]
    column.add_(5)
    x.t()[2].fill_(1)
    expected = np.zeros((3, 4), np.float32)
    expected[:, 1] = 5
    expected[:, 2] = 1
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    assert column._data.buffer is x._data.buffer


def test_memory_statistics_follow_allocations():
    before = backend().memory_stats(0)
    big = ember.empty(1 << 20, device="opencl")
    after = backend().memory_stats(0)
    assert after["allocated_bytes"] >= before["allocated_bytes"] + (1 << 22)
    assert after["peak_bytes"] >= after["allocated_bytes"]
    del big


def test_integer_division_by_zero_raises():
    a = ember.tensor([4, 5], device="opencl")
    with pytest.raises(ZeroDivisionError, match="floor_divide: integer division by zero"):
        a // ember.tensor([1, 0], device="opencl")
    assert (a // ember.tensor([-3, 2], device="opencl")).tolist() == [-2, 2]


@pytest.mark.parametrize("shapes", [((70, 33), (33, 45)), ((2, 1, 8, 16), (3, 16, 24)), ((5,), (5, 7))])
def test_gpu_tiling_of_matmul_is_right_here_too(shapes, monkeypatch):
    """The local-memory GEMM that non-CPU devices get, run on this device."""
    monkeypatch.setattr(runtime(), "is_cpu", False)
    a, b = (np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in shapes)
    got = (ember.tensor(a, device="opencl") @ ember.tensor(b, device="opencl")).cpu().numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


_CPU_GEMM_SHAPES = [((40, 33), (33, 50)), ((3, 40, 8), (8, 20)), ((2, 1, 37, 5), (3, 5, 18)), ((36, 0), (0, 5)),
                    ((40, 7), (7,)), ((5, 7), (7, 9)), ((2, 64, 16), (2, 16, 32))]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("shapes", _CPU_GEMM_SHAPES)
def test_cpu_device_gemm_over_dtypes_layouts_and_batches(shapes, dtype, monkeypatch):
    """The packed and unpacked register-blocked GEMM of CPU devices: edge blocks, empty K, broadcast
    batches and transposed operands, in every vector width (2, 4, 8 and 16 lanes)."""
    monkeypatch.setattr(runtime(), "is_cpu", True)
    kind = getattr(ember, dtype)
    if kind not in backend().supported_dtypes(0):
        pytest.skip(f"opencl:0 has no {dtype}")
    rng = np.random.default_rng(1)
    a, b = ((rng.standard_normal(s) * 3).astype(dtype) for s in shapes)
    wide = np.float64 if a.dtype.kind == "f" else np.int64  # integers wrap as the kernel's arithmetic does
    expected = (a.astype(wide) @ b.astype(wide)).astype(dtype)
    da, db = ember.tensor(a, device="opencl"), ember.tensor(b, device="opencl")
    np.testing.assert_allclose((da @ db).cpu().numpy(), expected, rtol=1e-5, atol=1e-4)
    if a.ndim >= 2 and b.ndim >= 2:  # the same product read through transposed strides
        ta = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), device="opencl").transpose(-1, -2)
        tb = ember.tensor(np.ascontiguousarray(np.swapaxes(b, -1, -2)), device="opencl").transpose(-1, -2)
        np.testing.assert_allclose((ta @ tb).cpu().numpy(), expected, rtol=1e-5, atol=1e-4)


def test_random_streams_follow_the_seed_and_the_state():
    ember.manual_seed(7)
    first = ember.rand(5, device="opencl").tolist()
    generator = ember.Generator(device="opencl")
    generator.manual_seed(7)
    state = generator.get_state()
    again = ember.rand(5, generator=generator, device="opencl").tolist()
    generator.set_state(state)
    assert ember.rand(5, generator=generator, device="opencl").tolist() == again == first


def test_half_storage_paths_where_the_device_has_fp16(monkeypatch):
    """float16 is stored as half and computed in float (vload_half/vstore_half, core OpenCL): run those
    kernels here by claiming cl_khr_fp16 for this device, and compare with the CPU backend."""
    monkeypatch.setattr(runtime(), "fp16", True)
    x = ember.randn(6, 9).to(ember.float16)
    on_device = x.to("opencl")
    for name, fn in [("arith", lambda t: t * 2 - 1), ("exp", lambda t: t.exp()), ("sum", lambda t: t.sum(1)),
                     ("matmul", lambda t: t @ t.t()), ("sort", lambda t: t.sort(1).values),
                     ("softmax", lambda t: t.softmax(1)), ("index", lambda t: t[[0, 2], 1:])]:
        got, expected = fn(on_device), fn(x)
        assert got.dtype is ember.float16, name
        np.testing.assert_allclose(got.cpu().numpy().astype(np.float32), expected.numpy().astype(np.float32),
                                   rtol=2e-3, atol=2e-3, err_msg=name)
    draws = ember.rand(4000, dtype=ember.float16, device="opencl").cpu().numpy()
    assert draws.min() >= 0 and draws.max() < 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_short_reductions_over_many_outputs(dtype):
    """Many short rows take the one-work-item-per-output form; long ones the work-group tree."""
    rng = np.random.default_rng(1)
    for shape, dim in [((700, 5), 1), ((3, 9, 400), 1), ((2, 3000), 1), ((40, 50), 0)]:
        data = (rng.standard_normal(shape) * 10).astype(dtype)
        if dtype != np.int32:
            data.flat[::37] = np.nan
        x = ember.tensor(data, device="opencl")
        for name, reference in [("sum", np.sum), ("amax", np.max), ("amin", np.min)]:
            got = getattr(x, name)(dim).cpu().numpy()
            np.testing.assert_allclose(got, reference(data, axis=dim), rtol=1e-5, err_msg=f"{name}{shape}")
        for name, cpu in [("argmax", x.cpu().argmax), ("argmin", x.cpu().argmin)]:
            np.testing.assert_array_equal(getattr(x, name)(dim).cpu().numpy(), cpu(dim).numpy(), err_msg=name)
