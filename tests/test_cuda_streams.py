"""ember.cuda's streams, events, record_stream, device facts, memory report and NVTX.

The host-side pieces (errors where CUDA is unavailable, the no-op NVTX, the memory table, the in-flight
bookkeeping, the properties object) run on every machine. The rest needs a GPU: those tests skip unless
``ember.cuda.is_available()``, and ``scripts/check_cuda.sh`` runs them on a GPU machine.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
from ember.cuda.device_info import CudaDeviceProperties
from ember.cuda.memory_report import format_bytes, format_memory_summary, torch_memory_stats
from ember.dispatch import registry
from ember.dispatch.contract.inflight import InFlight

CUDA = ember.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason=f"CUDA is unavailable: {ember.cuda.unavailable_reason()}")
unavailable_only = pytest.mark.skipif(CUDA, reason="CUDA is available here")

NEW_NAMES = ("Stream", "Event", "StreamContext", "current_stream", "default_stream", "set_stream", "stream",
             "get_device_name", "get_device_properties", "get_device_capability", "mem_get_info",
             "memory_stats", "memory_summary", "nvtx")


def test_the_new_names_are_public():
    for name in NEW_NAMES:
        assert name in ember.cuda.__all__ and hasattr(ember.cuda, name), name
    assert callable(ember.Tensor.record_stream)


# -- where CUDA is unavailable -------------------------------------------------------------------
@unavailable_only
@pytest.mark.parametrize("call", [
    ember.cuda.Stream, lambda: ember.cuda.Stream(priority=-1), ember.cuda.Event,
    lambda: ember.cuda.Event(enable_timing=True), ember.cuda.current_stream, ember.cuda.default_stream,
    ember.cuda.get_device_name, lambda: ember.cuda.get_device_properties(0), ember.cuda.get_device_capability,
    ember.cuda.mem_get_info, ember.cuda.memory_stats, ember.cuda.memory_summary,
], ids=["Stream", "Stream(priority)", "Event", "Event(timing)", "current_stream", "default_stream",
        "get_device_name", "get_device_properties", "get_device_capability", "mem_get_info", "memory_stats",
        "memory_summary"])
def test_each_call_raises_the_reason_cuda_is_unavailable(call):
    with pytest.raises(ember.DeviceError, match=r"^cuda: unavailable: ") as info:
        call()
    assert ember.cuda.unavailable_reason() in str(info.value)


def test_stream_none_is_a_no_op_anywhere():
    context = ember.cuda.stream(None)
    with context as entered:
        x = ember.ones(3) * 2
    assert entered is None and x.tolist() == [2.0, 2.0, 2.0]
    assert ember.cuda.set_stream(None) is None


def test_a_backend_without_the_runtime_hook_names_its_device_type():
    with pytest.raises(ember.DeviceError, match=r"^cpu: this backend has no streams, events") as info:
        registry.get_backend("cpu").device_runtime()
    assert "device_runtime hook" in str(info.value)


def test_record_stream_refuses_what_is_not_a_stream():
    with pytest.raises(TypeError, match="record_stream: expected an ember.cuda.Stream, got str"):
        ember.ones(2).record_stream("stream")


# -- NVTX ----------------------------------------------------------------------------------------
def test_nvtx_counts_depths_and_a_range_balances_them():
    nvtx = ember.cuda.nvtx
    assert nvtx.range_push("outer") == 0
    assert nvtx.range_push("inner") == 1
    assert nvtx.range_pop() == 1 and nvtx.range_pop() == 0
    assert nvtx.range_pop() == -1  # nothing open
    with nvtx.range("step {} of {n}", 3, n=10):
        assert nvtx.range_push("nested") == 1
        nvtx.range_pop()
    assert nvtx.range_push("after") == 0 and nvtx.range_pop() == 0
    assert nvtx.mark("here") is None


@unavailable_only
def test_nvtx_is_a_no_op_without_cuda():
    assert ember.cuda.nvtx._runtime() is None  # no backend is asked: every annotation returns at once
    ember.cuda.nvtx.mark("no device")
    with ember.cuda.nvtx.range("no device"):
        assert ember.cuda.nvtx.range_push("inner") == 1
        assert ember.cuda.nvtx.range_pop() == 1


# -- the memory report ---------------------------------------------------------------------------
def test_memory_stats_use_pytorchs_keys():
    raw = {"allocated_bytes": 1536, "peak_bytes": 4096, "reserved_bytes": 8192, "other": 7}
    assert torch_memory_stats(raw) == {"allocated_bytes.all.current": 1536, "allocated_bytes.all.peak": 4096,
                                       "reserved_bytes.all.current": 8192}
    assert list(torch_memory_stats(raw)) == sorted(torch_memory_stats(raw))
    assert torch_memory_stats({"allocated_bytes": 5}) == {"allocated_bytes.all.current": 5}


def test_bytes_are_shown_with_binary_units():
    assert format_bytes(0) == "0 B" and format_bytes(1023) == "1023 B"
    assert format_bytes(1536) == "1.50 KiB" and format_bytes(3 * 1024 ** 3) == "3.00 GiB"


def test_memory_summary_is_a_table_of_the_stats():
    stats = {"allocated_bytes.all.current": 3 * 1024 ** 2, "allocated_bytes.all.peak": 5 * 1024 ** 2,
             "reserved_bytes.all.current": 8 * 1024 ** 2}
    text = format_memory_summary(stats, 1)
    lines = text.splitlines()
    assert "Ember CUDA memory summary, device ID 1" in lines[1]
    assert len({len(line) for line in lines}) == 1  # a rectangle
    allocated = next(line for line in lines if "Allocated memory" in line)
    assert "3.00 MiB" in allocated and "5.00 MiB" in allocated
    reserved = next(line for line in lines if "Reserved memory" in line)
    assert "8.00 MiB" in reserved
    cached = next(line for line in lines if "Cached, not allocated" in line)
    assert "5.00 MiB" in cached  # reserved - allocated
    short = format_memory_summary(stats, 1, abbreviated=True)
    assert "Cached" not in short and "Allocated memory" in short
    empty = format_memory_summary({}, 0)
    assert "Allocated memory" in empty and "MiB" not in empty and " - " in empty


# -- device properties ---------------------------------------------------------------------------
def test_properties_take_pytorchs_names_and_ignore_the_rest():
    facts = {"name": "Some GPU", "major": 9, "minor": 0, "total_memory": 80 * 1024 ** 3,
             "multi_processor_count": 132, "L2_cache_size": 50 * 1024 ** 2, "unknown_field": 1}
    props = CudaDeviceProperties.from_facts(facts)
    assert (props.name, props.major, props.minor, props.multi_processor_count) == ("Some GPU", 9, 0, 132)
    assert props.warp_size is None and not hasattr(props, "unknown_field")
    assert repr(props) == ("_CudaDeviceProperties(name='Some GPU', major=9, minor=0, total_memory=81920MB, "
                           "multi_processor_count=132, L2_cache_size=50MB)")
    with pytest.raises(TypeError):
        CudaDeviceProperties.from_facts({"name": "incomplete"})


def test_cupys_property_fields_are_renamed_as_pytorch_names_them():
    from ember.backends.cuda.runtime import torch_properties
    raw = {"name": b"NVIDIA H200", "major": 9, "minor": 0, "totalGlobalMem": 150 * 1024 ** 3,
           "multiProcessorCount": 132, "warpSize": 32, "l2CacheSize": 60 * 1024 ** 2, "integrated": 0,
           "isMultiGpuBoard": 0, "clockRate": 1980000}
    facts = torch_properties(raw)
    assert facts == {"name": "NVIDIA H200", "major": 9, "minor": 0, "total_memory": 150 * 1024 ** 3,
                     "multi_processor_count": 132, "warp_size": 32, "L2_cache_size": 60 * 1024 ** 2,
                     "is_integrated": False, "is_multi_gpu_board": False}
    props = CudaDeviceProperties.from_facts(facts)
    assert props.total_memory == 150 * 1024 ** 3 and props.is_integrated is False


# -- the in-flight helper ------------------------------------------------------------------------
class ManualEvent:
    """An event the test completes by hand: what InFlight needs of a CUDA event."""

    def __init__(self) -> None:
        self.done = False


class Buffer:
    """A stand-in for device memory whose release can be observed."""

    released: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        Buffer.released.append(self.name)


def test_in_flight_keeps_objects_until_their_event_is_done():
    Buffer.released = []
    in_flight = InFlight()
    first, second = ManualEvent(), ManualEvent()
    in_flight.keep(first, Buffer("a"), Buffer("b"))
    in_flight.keep(second, Buffer("c"))
    gc.collect()
    assert Buffer.released == [] and len(in_flight) == 2
    second.done = True  # events on different streams finish in any order
    assert in_flight.release_done() == 1
    gc.collect()
    assert Buffer.released == ["c"]
    assert in_flight.release_done() == 1  # "a" and "b" wait for their own event
    first.done = True
    in_flight.keep(ManualEvent(), Buffer("d"))  # keeping a new one lets go of the finished ones
    gc.collect()
    assert sorted(Buffer.released) == ["a", "b", "c"] and len(in_flight) == 1


# -- on a GPU ------------------------------------------------------------------------------------
def _busy(n: int = 4096, repeats: int = 40) -> ember.Tensor:
    """Matrix products on the current stream that keep an H200 busy for tens of milliseconds (tanh keeps
    the values bounded)."""
    a = ember.randn(n, n, device="cuda")
    b = ember.randn(n, n, device="cuda") / n ** 0.5
    for _ in range(repeats):
        a = ember.tanh(a @ b)
    return a


@needs_cuda
def test_streams_compare_by_device_and_handle():
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    assert ember.cuda.default_stream().cuda_stream == 0
    side = ember.cuda.Stream()
    assert side != ember.cuda.default_stream() and side.cuda_stream != 0
    assert side.device == ember.device("cuda", ember.cuda.current_device())
    assert len({side, ember.cuda.default_stream(), ember.cuda.current_stream()}) == 2
    assert ember.cuda.Stream(priority=100).priority == 0  # clamped to the lowest priority
    assert ember.cuda.Stream(priority=-100).priority < 0  # the highest priority the device offers
    assert "cuda_stream=0x" in repr(side)


@needs_cuda
def test_ops_inside_the_stream_context_run_on_that_stream():
    import cupy
    side = ember.cuda.Stream()
    before = ember.cuda.current_stream()
    ember.cuda.synchronize()
    with ember.cuda.stream(side):
        assert ember.cuda.current_stream() == side
        assert cupy.cuda.get_current_stream().ptr == side.cuda_stream
        result = _busy()
        # the work went to the side stream: it is still running there, and the default stream is idle
        assert not side.query() and ember.cuda.default_stream().query()
        uploaded = ember.tensor(np.arange(1 << 19, dtype=np.float32), device="cuda")  # pinned, async
        drawn = ember.randn(1000, device="cuda")
    assert ember.cuda.current_stream() == before
    assert cupy.cuda.get_current_stream().ptr == before.cuda_stream
    side.synchronize()
    assert side.query() and bool(ember.isfinite(result).all())
    assert uploaded[-1].item() == (1 << 19) - 1 and abs(drawn.mean().item()) < 0.2


@needs_cuda
def test_work_on_a_side_stream_waited_for_by_the_main_stream_gives_the_right_values():
    main, side = ember.cuda.current_stream(), ember.cuda.Stream()
    x = ember.arange(1 << 22, dtype=ember.float32, device="cuda")
    side.wait_stream(main)  # x is written on the main stream
    with ember.cuda.stream(side):
        y = x * 2
        for _ in range(20):
            y = y + 1
    x.record_stream(side)
    main.wait_stream(side)
    difference = y - x * 2  # on the main stream, after the side stream's work
    assert bool((difference == 20).all()) and difference.shape == (1 << 22,)


@needs_cuda
def test_event_timing_is_positive_and_refused_without_timing():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    assert start.query() and start.cuda_event == 0  # not recorded yet: nothing to wait for
    start.record()
    _busy(2048, 10)
    end.record()
    end.synchronize()
    assert end.query() and end.elapsed_time(end) == 0.0
    assert start.elapsed_time(end) > 0.0
    untimed = ember.cuda.Event()
    untimed.record()
    with pytest.raises(ValueError, match="Both events must be created with argument 'enable_timing=True'"):
        start.elapsed_time(untimed)
    with pytest.raises(ValueError, match="Both events must be recorded"):
        start.elapsed_time(ember.cuda.Event(enable_timing=True))
    side = ember.cuda.Stream()
    event = side.record_event()
    ember.cuda.current_stream().wait_event(event)
    event.wait()
    event.synchronize()
    assert event.query() and side.query()


@needs_cuda
def test_record_stream_keeps_the_memory_until_the_stream_is_done():
    runtime = registry.get_backend("cuda").device_runtime()
    gc.collect()  # earlier tests' garbage must not be freed while this one measures
    ember.cuda.synchronize()
    side = ember.cuda.Stream()
    x = ember.empty(1 << 20, dtype=ember.float32, device="cuda")
    allocated = ember.cuda.memory_allocated()
    x.record_stream(side)
    assert len(runtime.lent) >= 1
    del x
    gc.collect()
    assert ember.cuda.memory_allocated() == allocated  # still held for the side stream
    ember.cuda.synchronize()  # the side stream is done: the memory goes back to the pool
    assert ember.cuda.memory_allocated() <= allocated - 4 * (1 << 20)
    assert len(runtime.lent) == 0


@needs_cuda
def test_device_facts():
    props = ember.cuda.get_device_properties()
    assert isinstance(props.name, str) and props.name and props.name == ember.cuda.get_device_name(0)
    assert ember.cuda.get_device_capability() == (props.major, props.minor) and props.major >= 5
    assert props.multi_processor_count > 0 and props.total_memory > 1 << 30
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total and abs(total - props.total_memory) <= 0.05 * total
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == ember.cuda.memory_allocated()
    assert "Allocated memory" in ember.cuda.memory_summary()


@needs_cuda
def test_nvtx_ranges_on_the_gpu_are_balanced():
    with ember.cuda.nvtx.range("gpu {}", 1):
        ember.cuda.nvtx.mark("inside")
        assert ember.cuda.nvtx.range_push("nested") == 1
        assert ember.cuda.nvtx.range_pop() == 1
    assert ember.cuda.nvtx.range_pop() == -1


@needs_cuda
def test_a_copy_to_another_gpu_waits_for_the_source_work():
    if ember.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    with ember.cuda.stream(ember.cuda.Stream(0)):
        source = _busy(2048, 10)
        copied = source.to("cuda:1")  # queued while the side stream of cuda:0 still computes source
    ember.cuda.synchronize(0)
    assert np.array_equal(copied.cpu().numpy(), source.cpu().numpy())


@needs_cuda
def test_nccl_keeps_its_buffers_and_leaves_the_current_device_alone(monkeypatch):
    import cupy
    import ember.distributed as dist
    from ember.distributed.engines.nccl import nccl_unavailable_reason
    reason = nccl_unavailable_reason()
    if not dist.is_mpi_available() or reason is not None:
        pytest.skip(f"needs mpi4py and NCCL ({reason or 'mpi4py is not installed'})")
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    device_before = cupy.cuda.runtime.getDevice()
    dist.init_process_group("nccl")
    try:
        t = ember.arange(6, dtype=ember.int16, device="cuda")  # int16 travels as a converted int32 copy
        work = dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True)
        engine = dist.group.WORLD.engine_for(t.device, "all_reduce")
        assert len(engine._in_flight) >= 1  # the converted copy is held until the NCCL stream is done
        assert work.wait() and t.tolist() == [0, 1, 2, 3, 4, 5]  # ordered on the current stream
        assert cupy.cuda.runtime.getDevice() == device_before
        ember.cuda.synchronize()
        assert work.is_completed() and engine._in_flight.release_done() == 0
    finally:
        dist.destroy_process_group()
