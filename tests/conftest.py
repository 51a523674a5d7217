"""Fixtures shared by the project tests."""
from datetime import timedelta

import pytest


@pytest.fixture
def world(monkeypatch):
    """A default process group of this process alone (MPI as a singleton), destroyed afterwards; the
    torchrun variables of an outer launcher are cleared so that the rendezvous checks see a world of one."""
    dist = pytest.importorskip("ember.distributed")
    pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is not installed")
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    yield
    dist.destroy_process_group()
