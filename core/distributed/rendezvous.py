"""Checking ``init_method``, ``world_size`` and ``rank`` against the MPI world the process was started in.

With MPI the launcher (``mpiexec``, or ``python -m ember.distributed.run``) has already done the rendezvous:
it started the ranks and connected them. So an init method is not contacted; what it says (torchrun's
environment for ``env://``, the ``rank``/``world_size`` arguments or URL query for ``tcp://`` and ``file://``)
is checked against the MPI world, and a disagreement is an error at once rather than a hang.
"""
from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

from .errors import DistNetworkError

_LAUNCH_HINT = ("start the ranks with `python -m ember.distributed.run --nproc-per-node N script.py` "
                "or `mpiexec -n N python script.py`")


def check(init_method: str | None, world_size: int, rank: int, mpi_rank: int, mpi_size: int) -> None:
    """Raise DistNetworkError unless the job described to ``init_process_group`` is the MPI world."""
    url = urlparse(init_method or "env://")
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    world_size = _int(query.get("world_size"), "world_size", world_size)
    rank = _int(query.get("rank"), "rank", rank)
    if url.scheme == "env":
        world_size = _int(os.environ.get("WORLD_SIZE"), "WORLD_SIZE", world_size)
        rank = _int(os.environ.get("RANK"), "RANK", rank)
        if "MASTER_PORT" in os.environ:
            _int(os.environ["MASTER_PORT"], "MASTER_PORT", -1)
    elif url.scheme == "tcp":
        if not url.hostname or url.port is None:
            raise ValueError(f"init_process_group: init_method {init_method!r} must look like tcp://host:port")
    elif url.scheme == "file":
        if not url.path:
            raise ValueError(f"init_process_group: init_method {init_method!r} must look like file:///path")
    else:
        raise ValueError(f"init_process_group: unsupported init_method {init_method!r}; use env://, "
                         f"tcp://host:port or file:///path")
    if world_size not in (-1, mpi_size):
        raise DistNetworkError(
            f"init_process_group: the job was described with world_size={world_size}, but this process is "
            f"rank {mpi_rank} of an MPI world of {mpi_size} process(es); {_LAUNCH_HINT} with N={world_size}")
    if rank not in (-1, mpi_rank):
        raise DistNetworkError(
            f"init_process_group: this process was given rank {rank}, but MPI started it as rank {mpi_rank} "
            f"of {mpi_size}; let the launcher assign ranks (RANK is set from MPI by ember.distributed.run)")


def _int(text, name: str, current: int) -> int:
    """``text`` as an int when given (it overrides ``current`` only if ``current`` was unset)."""
    if text is None:
        return current
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"init_process_group: {name}={text!r} is not an integer") from None
    if current not in (-1, value):
        raise ValueError(f"init_process_group: {name} is {value} in the environment or URL but {current} "
                         f"was passed")
    return value
