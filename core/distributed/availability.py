"""Which engines this installation can run, answered without starting any of them eagerly."""
from __future__ import annotations

import importlib.util


def is_mpi_available() -> bool:
    """True when mpi4py imports and finds an MPI library (the ``mpich`` wheel of ``ember[distributed]``).

    Importing ``mpi4py.MPI`` initialises MPI (a one-process world when not started by mpiexec)."""
    if importlib.util.find_spec("mpi4py") is None:
        return False
    try:
        from mpi4py import MPI  # noqa: F401
    except (ImportError, RuntimeError, OSError):
        return False
    return True


def is_nccl_available() -> bool:
    """True when CuPy provides its NCCL bindings and a CUDA device is present."""
    from .engines.nccl import nccl_unavailable_reason
    return nccl_unavailable_reason() is None


def is_gloo_available() -> bool:
    """``"gloo"`` runs on the MPI engine, so it is available whenever MPI is."""
    return is_mpi_available()


def is_available() -> bool:
    """True when ``init_process_group`` can work here: MPI is the engine (and NCCL's bootstrap)."""
    return is_mpi_available()


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """True in a process started by ``ember.distributed.run`` (torchrun's variable is set)."""
    import os
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None
