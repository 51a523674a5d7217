"""Running out of device memory: ``OutOfMemoryError`` (PyTorch's ``torch.OutOfMemoryError``, a RuntimeError)
naming the bytes, the device and its figures, the op where one ran, after one retry with the cache freed;
and the process goes on working. On every device available: OpenCL (PoCL here, for real), CUDA on a GPU.

Sizes come from the device's own figures, so the same tests run on a 5 GiB PoCL device and an 80 GiB GPU.
Nothing large is ever written: ``empty`` reserves memory without touching it (PoCL backs it lazily), so the
host's memory stays small whatever the device's size.
"""
from __future__ import annotations

from math import isqrt

import numpy as np
import pytest

import ember
from ember.backends import available, registered

MiB = 1 << 20
#: Filling a device stops when a piece this size no longer fits; a request of twice this then cannot fit.
MARGIN = 32 * MiB


@pytest.fixture(params=["opencl", "cuda"])
def device(request) -> str:
    status = available().get(request.param, "not installed")
    if status != "available":
        pytest.skip(f"{request.param}: {status}")
    memory = registered()[request.param].device_memory(None)
    memory.free_cache()
    yield request.param
    memory.free_cache()  # leave no cache of big blocks to the tests that follow


def memory_of(device: str):
    """The device's ``ember.backends.device_memory.DeviceMemory``: its figures, cache and name."""
    return registered()[device].device_memory(None)


def fill(device: str) -> list:
    """Tensors that take the device's memory until less than ``MARGIN`` bytes fit in one piece."""
    memory = memory_of(device)
    held, size = [], memory.largest or memory.figures().total
    while size >= MARGIN:
        try:
            held.append(ember.empty(size, dtype=ember.uint8, device=device))
        except ember.OutOfMemoryError:
            size //= 2
    return held


def assert_still_usable(device: str) -> None:
    """A new allocation and an op on it work, and give the right values."""
    x = ember.arange(6, dtype=ember.float32, device=device)
    assert (x * 2 + 1).tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
    assert ember.zeros(MARGIN // 4, device=device)[-3:].tolist() == [0.0, 0.0, 0.0]


def test_an_allocation_the_device_can_never_hold_names_bytes_and_device(device):
    memory = memory_of(device)
    nbytes = -(-2 * memory.figures().total // MiB) * MiB  # twice the capacity, in whole MiB (CUDA rounds sizes)
    with pytest.raises(ember.cuda.OutOfMemoryError) as caught:
        ember.empty(nbytes, dtype=ember.uint8, device=device)
    assert isinstance(caught.value, RuntimeError)
    message = str(caught.value)
    assert message.startswith(f"empty: {memory.name} out of memory. Tried to allocate ")
    assert f"({nbytes} bytes)" in message and "total capacity of" in message
    if memory.largest is not None:  # refused at once (no retry can help), naming the most one allocation takes
        assert f"({memory.largest} bytes) one allocation can take on this device" in message
        assert "trying again" not in message
    assert_still_usable(device)


@pytest.mark.parametrize("make", ["empty", "tensor", "to"])
def test_an_allocation_beyond_what_is_free_raises_out_of_memory(device, make):
    """Below the largest single allocation, above what is left: ``empty`` (an op), an upload of a NumPy array and
    ``.to(device)``. On PoCL this is the case the device itself would accept and crash on at first use."""
    held = fill(device)
    host = np.ones(2 * MARGIN // 4, np.float32)
    attempts = {"empty": lambda: ember.empty(2 * MARGIN, dtype=ember.uint8, device=device),
                "tensor": lambda: ember.tensor(host, device=device),
                "to": lambda: ember.from_numpy(host).to(device)}
    with pytest.raises(ember.OutOfMemoryError) as caught:
        attempts[make]()
    message = str(caught.value)
    assert isinstance(caught.value, RuntimeError)
    assert f"{memory_of(device).name} out of memory. Tried to allocate 64.00 MiB ({2 * MARGIN} bytes)" in message
    assert "after freeing the cache and trying again" in message
    if make == "empty":
        assert message.startswith("empty: ")
    del held
    assert_still_usable(device)


@pytest.mark.parametrize("op", ["add", "clone"])
def test_an_op_whose_result_cannot_be_allocated_names_the_op(device, op):
    """Small inputs, a result of twice the device's capacity: a broadcast add, and ``expand(...).contiguous()``."""
    memory = memory_of(device)
    elements = 2 * memory.figures().total // 4 + 1  # float32
    with pytest.raises(ember.OutOfMemoryError) as caught:
        if op == "add":
            side = isqrt(elements) + 1
            ember.ones(side, 1, device=device) + ember.ones(1, side, device=device)
        else:
            ember.ones(1, device=device).expand(elements).contiguous()
    message = str(caught.value)
    assert message.startswith(f"{op}: {memory.name} out of memory. Tried to allocate ")
    assert "inputs: tensor(shape=" in message and f"device={memory.name})" in message
    assert_still_usable(device)


def test_a_failed_allocation_frees_the_cache_and_succeeds_on_the_retry(device):
    """Freed tensors stay in the allocator's cache; an allocation that fits only without them frees the cache
    and is tried again, as PyTorch's caching allocator does."""
    memory = memory_of(device)
    free = memory.figures().free
    wanted = min(memory.largest or free, free // 2) // MiB * MiB
    block = wanted // 2 // MiB * MiB  # smaller than ``wanted``: no cached block can serve it
    cached = [ember.empty(block, dtype=ember.uint8, device=device) for _ in range((free - wanted) // block + 1)]
    del cached
    before = memory.figures()
    assert before.cached >= block and before.free < wanted  # it fits only once the cache is freed
    big = ember.empty(wanted, dtype=ember.uint8, device=device)
    after = memory.figures()
    assert after.cached < block and after.allocated >= wanted
    big[:4].fill_(7)
    assert big[:4].tolist() == [7, 7, 7, 7]


# -- kernel launches (OpenCL) -------------------------------------------------------------------------------
_FILL = "__kernel void ember_test_fill(__global int *out) { out[get_global_id(0)] = 1; }"


class RefusedLaunches:
    """A real kernel whose first ``refusals`` enqueues fail as a GPU driver's do when it runs out of memory
    (CL_OUT_OF_RESOURCES at launch). PoCL never refuses a launch (not even one asking 1 TiB of local memory),
    so this stands in for such a driver; the pool, its cache and the kernel are real."""

    def __init__(self, kernel, refusals: int) -> None:
        self.kernel, self.refusals = kernel, refusals

    def __call__(self, *args):
        import pyopencl as cl
        if self.refusals:
            self.refusals -= 1
            # the error PyOpenCL raises for a failed call, from its own record of one
            record = cl._cl._ErrorRecord(routine="clEnqueueNDRangeKernel", code=cl.status_code.OUT_OF_RESOURCES, msg="")
            raise cl.RuntimeError(record)
        return self.kernel(*args)


@pytest.fixture
def opencl_runtime():
    status = available().get("opencl", "not installed")
    if status != "available":
        pytest.skip(f"opencl: {status}")
    from ember.backends.opencl.runtime import runtime_of
    return runtime_of(0)


def test_a_launch_refused_for_memory_runs_again_after_the_cache_is_freed(opencl_runtime):
    runtime = opencl_runtime
    out = ember.zeros(16, dtype=ember.int32, device="opencl")
    ember.ones(1000, device="opencl")  # dropped at once: its block goes back to the pool's cache
    assert runtime.pool.held_blocks > 0
    kernel = runtime.programs.kernel(_FILL, "ember_test_fill")
    runtime.enqueue(RefusedLaunches(kernel, refusals=1), (16,), None, out._data.buffer)
    assert runtime.pool.held_blocks == 0 and runtime.memory.figures().cached == 0
    assert out.tolist() == [1] * 16


def test_a_launch_refused_twice_raises_out_of_memory(opencl_runtime):
    runtime = opencl_runtime
    out = ember.zeros(16, dtype=ember.int32, device="opencl")
    kernel = runtime.programs.kernel(_FILL, "ember_test_fill")
    with pytest.raises(ember.OutOfMemoryError) as caught:
        runtime.enqueue(RefusedLaunches(kernel, refusals=2), (16,), None, out._data.buffer)
    assert str(caught.value).startswith("opencl:0 out of memory. A kernel launch failed: clEnqueueNDRangeKernel "
                                        "failed: OUT_OF_RESOURCES. opencl:0 has a total capacity of ")
    assert out.tolist() == [0] * 16  # nothing ran, and the device goes on working
    assert_still_usable("opencl")


def test_a_launch_error_that_is_not_about_memory_passes_through(opencl_runtime):
    import pyopencl as cl
    runtime = opencl_runtime
    out = ember.zeros(16, dtype=ember.int32, device="opencl")
    kernel = runtime.programs.kernel(_FILL, "ember_test_fill")
    too_big = runtime.device.max_work_group_size * 2
    with pytest.raises(cl.LogicError, match="INVALID_WORK_GROUP_SIZE"):
        runtime.enqueue(kernel, (too_big,), (too_big,), out._data.buffer)


# -- CUDA's host logic (CuPy imports without a GPU) ----------------------------------------------------------
def test_cupys_out_of_memory_error_is_recognised_with_the_bytes_it_asked_for():
    cupy = pytest.importorskip("cupy")
    from ember.backends.cuda.memory import CupyMemory
    memory = CupyMemory(cupy, 0)
    assert memory.name == "cuda:0"
    for error in (cupy.cuda.memory.OutOfMemoryError(1536, 4096), cupy.cuda.memory.OutOfMemoryError(1536, 4096, 8192)):
        assert memory.is_out_of_memory(error) and memory.bytes_asked(error) == 1536
    assert not memory.is_out_of_memory(MemoryError("host")) and memory.bytes_asked(MemoryError("host")) is None
