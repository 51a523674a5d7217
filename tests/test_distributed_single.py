"""ember.distributed in one process (a world of one, no mpiexec): API, semantics and errors."""
import subprocess
import sys
from datetime import timedelta

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.dispatch.schema.errors import DeviceError, DtypeError, ShapeError

needs_mpi = pytest.mark.skipif(not dist.is_mpi_available(), reason="the distributed extra (mpi4py) is not installed")


def test_importing_ember_does_not_start_mpi():
    code = "import sys, ember, ember.distributed as d; print('mpi4py' in sys.modules, d.is_initialized())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.split() == ["False", "False"]


def test_names_follow_pytorch():
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.NCCL == "nccl" and dist.Backend.MPI == "mpi"
    with pytest.raises(ValueError, match="unknown backend 'ucx'"):
        dist.Backend("ucx")
    assert {op.name for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN,
                               dist.ReduceOp.PRODUCT)} == {"SUM", "AVG", "MAX", "MIN", "PRODUCT"}
    assert dist.ReduceOp(dist.ReduceOp.MAX) is dist.ReduceOp.MAX
    assert dist.default_pg_timeout == timedelta(minutes=30)
    assert issubclass(dist.DistBackendError, RuntimeError)
    assert dist.is_gloo_available() == dist.is_mpi_available()


def test_before_init_the_queries_say_to_initialize():
    assert not dist.is_initialized() and dist.group.WORLD is None
    with pytest.raises(ValueError, match="get_rank: Default process group has not been initialized"):
        dist.get_rank()


@needs_mpi
def test_world_of_one(world):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "gloo" and dist.group.WORLD is not None
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo")
    t = ember.tensor([1.0, 2.0, 3.0])
    version = t._version[0]
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, 2.0, 3.0] and t._version[0] > version  # an in-place write, as in PyTorch
    out = ember.zeros(2, 3, dtype=ember.int32)
    dist.all_gather_into_tensor(out, ember.arange(6, dtype=ember.int32).reshape(2, 3))
    assert out.tolist() == [[0, 1, 2], [3, 4, 5]]
    objs = [None]
    dist.all_gather_object(objs, ("a", 1))
    assert objs == [("a", 1)]
    work = dist.all_reduce(ember.ones(4, dtype=ember.bfloat16), async_op=True)
    assert isinstance(work, dist.Work) and work.wait()


@needs_mpi
def test_all_reduce_on_a_leaf_that_requires_grad_and_on_a_view(world):
    w = ember.ones(4, requires_grad=True)
    with ember.no_grad():
        dist.all_reduce(w)
    assert w.tolist() == [1.0] * 4 and w.requires_grad
    base = ember.arange(6.0).reshape(2, 3)
    dist.broadcast(base[:, 1], src=0)
    assert base.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@needs_mpi
def test_bad_arguments_raise_clear_errors(world):
    with pytest.raises(DtypeError, match="all_reduce: Cannot use ReduceOp.AVG with boolean inputs"):
        dist.all_reduce(ember.ones(2, dtype=ember.bool), op=dist.ReduceOp.AVG)
    with pytest.raises(DtypeError, match="BAND needs integer or bool tensors, got float32"):
        dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND)
    with pytest.raises(TypeError, match="all_reduce: op must be a dist.ReduceOp"):
        dist.all_reduce(ember.ones(2), op="sum")
    with pytest.raises(ShapeError, match="all_gather_into_tensor: with 1 ranks .* should have 4 elements, got 5"):
        dist.all_gather_into_tensor(ember.zeros(5), ember.zeros(4))
    with pytest.raises(DtypeError, match="output_tensor has dtype int64 but input_tensor has float32"):
        dist.all_gather_into_tensor(ember.zeros(4, dtype=ember.int64), ember.zeros(4))
    with pytest.raises(ValueError, match="all_gather: tensor_list must be a list of 1 tensors"):
        dist.all_gather([ember.zeros(2), ember.zeros(2)], ember.zeros(2))
    with pytest.raises(ValueError, match="broadcast: src=3 is not a rank of the group"):
        dist.broadcast(ember.zeros(2), src=3)
    with pytest.raises(ValueError, match="isend: Invalid destination rank"):
        dist.isend(ember.zeros(2), dst=0)
    with pytest.raises(TypeError, match="broadcast: tensor must be an ember.Tensor, got ndarray"):
        dist.broadcast(np.zeros(2), src=0)


@needs_mpi
def test_a_tensor_on_a_device_the_backend_cannot_serve_names_both(world):
    nccl = dist.new_group(backend="nccl")
    assert dist.get_backend(nccl) == "nccl"
    with pytest.raises(DeviceError, match="all_reduce: the process group's backend 'nccl' cannot serve a tensor "
                                          "on cpu \\(it serves cuda\\)"):
        dist.all_reduce(ember.ones(2), group=nccl)


@needs_mpi
def test_init_methods_are_checked_against_the_mpi_world(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(dist.DistNetworkError, match="world_size=2, but this process is rank 0 of an MPI world of "
                                                    "1 process"):
        dist.init_process_group("gloo", init_method="env://")
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.delenv("RANK")
    with pytest.raises(dist.DistNetworkError, match="given rank 1, but MPI started it as rank 0"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:23456", world_size=1, rank=1)
    with pytest.raises(ValueError, match="must look like tcp://host:port"):
        dist.init_process_group("mpi", init_method="tcp://nohostport")
    with pytest.raises(ValueError, match="unsupported init_method 'udp://x'"):
        dist.init_process_group("mpi", init_method="udp://x")
    assert not dist.is_initialized()
    dist.init_process_group("mpi", init_method="file:///tmp/ember-rdzv?world_size=1&rank=0")
    assert dist.get_world_size() == 1 and dist.get_backend() == "mpi"
    dist.destroy_process_group()
    dist.init_process_group()  # PyTorch's default: per-device backends
    assert dist.get_backend() == "cpu:gloo,cuda:nccl"
    dist.destroy_process_group()


def test_timeout_override_from_the_environment(monkeypatch):
    from ember.distributed.constants import resolve_timeout
    monkeypatch.setenv("EMBER_DIST_TIMEOUT", "2.5")
    assert resolve_timeout(None) == timedelta(seconds=2.5)
    assert resolve_timeout(timedelta(seconds=7)) == timedelta(seconds=7)
    monkeypatch.setenv("EMBER_DIST_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="EMBER_DIST_TIMEOUT='soon' is not a number"):
        resolve_timeout(None)


def test_nccl_reports_why_it_is_unavailable_here():
    from ember.distributed.engines.nccl import nccl_unavailable_reason
    reason = nccl_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU with NCCL is present; the 2-rank NCCL path needs two GPUs and is not tested here")
    assert not dist.is_nccl_available() and ("CuPy" in reason or "CUDA" in reason)
