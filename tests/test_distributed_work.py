"""``Work`` on device-ordered operations (the NCCL engine's): ``wait()`` orders the caller's stream behind the
operation instead of blocking the host, as PyTorch's NCCL work does; ``wait(timeout=...)`` still blocks.

The device side is played by a small recorder here, so the host-side rules run on every machine; the
NCCL engine itself is exercised on a GPU by tests/test_cuda_streams.py.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

import ember.distributed as dist
from ember.distributed.work import Pending, Work

from test_distributed_single import needs_mpi  # (the world-of-one fixture, world, is in conftest.py)


@pytest.fixture
def group(world):
    return dist.group.WORLD


class DeviceOperation:
    """An operation queued on a device that the test finishes by hand; records what the host asked of it."""

    def __init__(self) -> None:
        self.finished_on_device = False
        self.calls: list[str] = []

    def test(self) -> bool:
        self.calls.append("test")
        return self.finished_on_device

    def device_wait(self) -> None:
        self.calls.append("device_wait")

    def finish(self) -> str:
        self.calls.append("finish")
        return "result"

    def pending(self) -> Pending:
        return Pending(self.test, self.finish, self.device_wait)


@needs_mpi
def test_wait_orders_the_stream_without_waiting_on_the_host(group):
    operation = DeviceOperation()  # never finishes on the device during the test
    work = Work("all_reduce", group, operation.pending())
    assert work.wait() is True
    assert operation.calls == ["device_wait", "finish"]  # no host polling
    assert work.result() == "result" and operation.calls.count("finish") == 1
    assert work.is_completed() is False  # the device has not finished it yet
    operation.finished_on_device = True
    assert work.is_completed() is True and operation.calls.count("finish") == 1


@needs_mpi
def test_wait_with_a_timeout_blocks_the_host_up_to_it(group):
    operation = DeviceOperation()
    work = Work("all_reduce", group, operation.pending())
    with pytest.raises(dist.DistBackendError, match=r"all_reduce: .*timed out after wait\(timeout="):
        work.wait(timeout=timedelta(milliseconds=50))
    assert "device_wait" not in operation.calls and "finish" not in operation.calls


@needs_mpi
def test_host_ordered_work_still_polls(group):
    done = iter([False, False, True])
    calls: list[str] = []
    work = Work("all_reduce", group, Pending(lambda: next(done), lambda: calls.append("finish")))
    assert work.wait() and calls == ["finish"] and work.is_completed()


@needs_mpi
def test_the_collectives_road_keeps_the_device_wait(group):
    from ember.distributed.collectives import _issue
    operation = DeviceOperation()
    committed: list[str] = []

    def issue():
        return operation.pending(), [lambda: committed.append("write back")]
    assert _issue("all_reduce", group, issue, async_op=False) is None  # a synchronous call returns at once
    assert operation.calls == ["device_wait", "finish"] and committed == ["write back"]
