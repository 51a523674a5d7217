"""DLPack exchange: memory shared with NumPy, PyTorch, Ember itself and CuPy; capsules, lifetimes, errors.

Sharing is proven by writing through one side and reading on the other, for every dtype and for
contiguous, strided, transposed, 0-d and empty tensors.
"""
from __future__ import annotations

import ctypes
import gc
import weakref

import numpy as np
import pytest

import ember
from ember.dispatch.schema.dtypes import ALL_DTYPES
from ember.interop import dlpack_host, dlpack_structs
from ember.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

DTYPES = [pytest.param(d, id=d.name) for d in ALL_DTYPES]
NUMPY_DTYPES = [pytest.param(d, id=d.name) for d in ALL_DTYPES if d.name != "bfloat16"]  # NumPy has no bf16 code

LAYOUTS = {
    "contiguous": lambda dt: ember.zeros(2, 3, dtype=dt),
    "strided": lambda dt: ember.zeros(3, 4, dtype=dt)[:, ::2],
    "transposed": lambda dt: ember.zeros(3, 4, dtype=dt).t(),
    "0-d": lambda dt: ember.zeros((), dtype=dt),
    "empty": lambda dt: ember.zeros(0, 3, dtype=dt),
}


def _all_equal(t: ember.Tensor, value: int) -> bool:
    return bool(np.all(np.asarray(t.float()) == value))


def _assert_shared_with_numpy(t: ember.Tensor, array: np.ndarray) -> None:
    assert array.shape == tuple(t.shape)
    if t.numel() == 0:
        return  # no memory to share, and strides of nothing are whatever the library likes
    assert tuple(s // array.itemsize for s in array.strides) == t.stride()
    array[...] = 1
    assert _all_equal(t, 1)
    t[...] = 0
    assert not array.astype(np.float32).any()


def _assert_shared_with_torch(t: ember.Tensor, other) -> None:
    assert tuple(other.shape) == tuple(t.shape)
    if t.numel() == 0:
        return
    assert other.stride() == t.stride()
    other.fill_(1)
    assert _all_equal(t, 1)
    t[...] = 0
    assert not bool(other.float().any())


# -- NumPy, both directions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_numpy_reads_and_writes_an_ember_tensor(dt, layout):
    t = LAYOUTS[layout](dt)
    _assert_shared_with_numpy(t, np.from_dlpack(t))


NUMPY_LAYOUTS = {
    "contiguous": lambda d: np.zeros((2, 3), d), "strided": lambda d: np.zeros((3, 4), d)[:, ::2],
    "transposed": lambda d: np.zeros((3, 4), d).T, "0-d": lambda d: np.zeros((), d),
    "empty": lambda d: np.zeros((0, 3), d),
}


@pytest.mark.parametrize("layout", NUMPY_LAYOUTS)
@pytest.mark.parametrize("dt", DTYPES)
def test_ember_reads_and_writes_a_numpy_array(dt, layout):
    array = NUMPY_LAYOUTS[layout](ember.zeros(1, dtype=dt).numpy().dtype)  # bfloat16: ml_dtypes' type
    t = ember.from_dlpack(array)
    assert t.dtype is dt and t.device == "cpu" and not t.requires_grad
    _assert_shared_with_numpy(t, array)


def test_negative_strides_travel_both_ways():
    array = np.arange(6.0)[::-2]
    t = ember.from_dlpack(array)
    assert t.stride() == (-2,) and t.tolist() == [5.0, 3.0, 1.0]
    back = np.from_dlpack(t)
    assert back.strides == array.strides
    back[0] = 50.0
    assert array[0] == 50.0 and t[0].item() == 50.0


def test_ember_to_ember_shares_for_every_dtype():
    for dt in ALL_DTYPES:
        t = ember.zeros(3, 4, dtype=dt)[1:, 1::2]
        u = ember.from_dlpack(t)
        assert u.dtype is dt and u.stride() == t.stride()
        u[...] = 1
        assert _all_equal(t, 1), dt


# -- PyTorch, both directions -------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dt", DTYPES)
def test_torch_reads_and_writes_an_ember_tensor(dt, layout):
    torch = pytest.importorskip("torch")
    t = LAYOUTS[layout](dt)
    other = torch.from_dlpack(t)
    assert other.dtype == getattr(torch, dt.name)
    _assert_shared_with_torch(t, other)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dt", DTYPES)
def test_ember_reads_and_writes_a_torch_tensor(dt, layout):
    torch = pytest.importorskip("torch")
    make = {"contiguous": lambda d: torch.zeros(2, 3, dtype=d), "strided": lambda d: torch.zeros(3, 4, dtype=d)[:, ::2],
            "transposed": lambda d: torch.zeros(3, 4, dtype=d).t(), "0-d": lambda d: torch.zeros((), dtype=d),
            "empty": lambda d: torch.zeros(0, 3, dtype=d)}[layout]
    other = make(getattr(torch, dt.name))
    t = ember.from_dlpack(other)
    assert t.dtype is dt and not t.requires_grad
    _assert_shared_with_torch(t, other)


def test_torch_capsules_both_ways_through_utils_dlpack():
    torch = pytest.importorskip("torch")
    t = ember.arange(4.0)
    other = torch.utils.dlpack.from_dlpack(to_dlpack(t))
    other[0] = 9.0
    assert t[0].item() == 9.0
    back = from_dlpack(torch.utils.dlpack.to_dlpack(other))
    back[1] = 8.0
    assert other[1].item() == 8.0 and t[1].item() == 8.0


def test_torch_tensor_that_requires_grad_imports_without_grad():
    torch = pytest.importorskip("torch")
    t = ember.from_dlpack(torch.ones(2, requires_grad=True).detach())
    assert not t.requires_grad


# -- capsules ----------------------------------------------------------------------------------------------

def test_versioned_capsule_only_for_consumers_of_dlpack_1():
    t = ember.arange(3)
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(t.__dlpack__())
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))


def test_consuming_renames_the_capsule_and_a_second_use_raises():
    t = ember.arange(3)
    capsule = to_dlpack(t)
    assert from_dlpack(capsule).tolist() == [0, 1, 2]
    assert '"used_dltensor"' in repr(capsule)
    with pytest.raises(ember.EmberError, match="consumed only once"):
        from_dlpack(capsule)
    versioned = t.__dlpack__(max_version=(1, 0))
    ember.from_dlpack(versioned)
    assert '"used_dltensor_versioned"' in repr(versioned)


def test_read_only_arrays_carry_their_flag():
    array = np.arange(4.0)
    array.flags.writeable = False
    t = ember.from_dlpack(array)
    assert not np.from_dlpack(t).flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # a legacy capsule has no read-only flag


def test_copy_argument():
    t = ember.arange(4.0)
    shared = np.from_dlpack(t, copy=False)
    copied = np.from_dlpack(t, copy=True)
    t[0] = 7.0
    assert shared[0] == 7.0 and copied[0] == 0.0
    managed = dlpack_structs.peek_capsule(t.__dlpack__(max_version=(1, 0), copy=True), versioned=True)
    assert managed.flags & dlpack_structs.FLAG_IS_COPIED
    own = ember.from_dlpack(np.arange(3.0), copy=True)
    assert own.tolist() == [0.0, 1.0, 2.0]


def test_dlpack_device_and_dl_device():
    t = ember.ones(2)
    assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    assert ember.from_dlpack(t.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0))).tolist() == [1.0, 1.0]
    with pytest.raises(BufferError, match="kDLCUDA"):
        t.__dlpack__(dl_device=(DLDeviceType.kDLCUDA, 0))
    with pytest.raises(TypeError, match="stream"):
        t.__dlpack__(stream="default")


def test_from_dlpack_moves_to_a_device_when_asked():
    t = ember.from_dlpack(np.arange(3.0), device="cpu")
    assert t.device == "cpu"
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2, 3])


def test_unsupported_dtype_is_named():
    with pytest.raises(BufferError, match="kDLUInt, bits=16"):
        ember.from_dlpack(np.zeros(2, np.uint16))


# -- autograd ----------------------------------------------------------------------------------------------

def test_tensors_that_require_grad_are_refused_like_pytorch():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(BufferError, match=r"Can't export tensors that require gradient, use tensor.detach\(\)"):
        x.__dlpack__()
    assert np.from_dlpack(x.detach()).tolist() == [1.0, 1.0]
    assert ember.from_dlpack(to_dlpack(x)).tolist() == [1.0, 1.0]  # to_dlpack exports the data, as torch's does


def test_refusal_matches_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(BufferError) as theirs:
        torch.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as ours:
        ember.ones(2, requires_grad=True).__dlpack__()
    assert str(ours.value) == str(theirs.value)


# -- lifetimes ---------------------------------------------------------------------------------------------

def test_exported_memory_outlives_the_tensor_until_the_consumer_dies():
    t = ember.arange(5.0)
    storage = weakref.ref(t.numpy())
    consumer = np.from_dlpack(t)
    del t
    gc.collect()
    assert storage() is not None and consumer.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    del consumer
    gc.collect()
    assert storage() is None  # the consumer called Ember's deleter


def test_an_unconsumed_capsule_frees_its_export():
    before = dlpack_host.live_export_count()
    capsule = ember.arange(3.0).__dlpack__(max_version=(1, 0))
    assert dlpack_host.live_export_count() == before + 1
    del capsule
    gc.collect()
    assert dlpack_host.live_export_count() == before


def test_imported_tensor_calls_the_producers_deleter_when_freed():
    array = np.arange(3.0)  # NumPy's capsule holds a reference to the array until its deleter runs
    producer = weakref.ref(array)
    t = ember.from_dlpack(array)
    del array
    gc.collect()
    assert producer() is not None and t.tolist() == [0.0, 1.0, 2.0]
    view = t[1:]
    del t
    gc.collect()
    assert producer() is not None and view.tolist() == [1.0, 2.0]
    del view
    gc.collect()
    assert producer() is None


def test_imported_torch_memory_stays_valid_after_the_torch_tensor_dies():
    torch = pytest.importorskip("torch")
    other = torch.arange(1000, dtype=torch.float64)
    t = ember.from_dlpack(other)
    del other
    gc.collect()
    assert t.sum().item() == sum(range(1000))


# -- devices -----------------------------------------------------------------------------------------------

OPENCL = ember.backends.available().get("opencl", "unavailable: not registered")


@pytest.mark.skipif(OPENCL != "available", reason=f"opencl {OPENCL}")
def test_opencl_tensor_says_to_copy_or_copies_when_allowed():
    t = ember.arange(4.0, device="opencl")
    assert t.__dlpack_device__() == (DLDeviceType.kDLOpenCL, 0)
    with pytest.raises(BufferError, match=r"tensor\.cpu\(\) first, or pass copy=True"):
        np.from_dlpack(t)
    with pytest.raises(BufferError, match="opencl backend cannot import DLPack"):
        ember.from_dlpack(t)
    copied = np.from_dlpack(t, copy=True)
    assert copied.tolist() == [0.0, 1.0, 2.0, 3.0]
    managed = dlpack_structs.peek_capsule(t.__dlpack__(max_version=(1, 0), copy=True), versioned=True)
    assert managed.dl_tensor.device.device_type == DLDeviceType.kDLCPU
    assert managed.flags & dlpack_structs.FLAG_IS_COPIED
    assert np.from_dlpack(t, device="cpu").tolist() == [0.0, 1.0, 2.0, 3.0]  # dl_device=kDLCPU, copy=None
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=False)


def _capsule_on(device_type: int):
    """A real DLPack capsule whose tensor claims to live on ``device_type`` (built with Ember's structs)."""
    capsule = dlpack_host.export_array(np.zeros(2, np.float32), ember.float32, versioned=True)
    dlpack_structs.peek_capsule(capsule, versioned=True).dl_tensor.device.device_type = device_type
    return capsule


def test_a_device_without_a_backend_is_named():
    with pytest.raises(ember.DeviceError, match="kDLROCM:0, which no Ember backend serves"):
        ember.from_dlpack(_capsule_on(DLDeviceType.kDLROCM))


@pytest.mark.skipif(ember.backends.available().get("cuda") == "available", reason="cuda is available here")
def test_a_cuda_capsule_without_cuda_says_why():
    with pytest.raises(ember.DeviceError, match="kDLCUDA:0.*cuda: unavailable"):
        ember.from_dlpack(_capsule_on(DLDeviceType.kDLCUDA))


CUDA = ember.backends.available().get("cuda", "unavailable: not registered")


@pytest.mark.skipif(CUDA != "available", reason=f"cuda {CUDA}")
def test_cupy_shares_cuda_memory_both_ways():
    cupy = pytest.importorskip("cupy")
    t = ember.zeros(3, 4, device="cuda")[:, ::2]
    other = cupy.from_dlpack(t)
    other[...] = 1
    assert _all_equal(t.cpu(), 1)
    array = cupy.zeros((2, 3), dtype=cupy.float32)
    u = ember.from_dlpack(array)
    assert u.device == "cuda:0"
    u[...] = 2
    assert float(array.sum()) == 12.0


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the offsets below are those of 64-bit builds")
def test_structs_match_the_dlpack_abi():
    assert ctypes.sizeof(dlpack_structs.DLTensor) == 48
    assert dlpack_structs.DLManagedTensor.manager_ctx.offset == 48
    assert dlpack_structs.DLManagedTensorVersioned.flags.offset == 24
    assert dlpack_structs.DLManagedTensorVersioned.dl_tensor.offset == 32
