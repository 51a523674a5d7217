"""``ember.distributed``: PyTorch's ``torch.distributed`` on established engines.

MPI (mpi4py, with the ``mpich`` wheel) serves cpu and opencl tensors; NCCL (``cupy.cuda.nccl``) serves cuda
tensors; the backend name ``"gloo"`` runs on MPI. Importing this package starts nothing: MPI is initialised
by ``init_process_group`` (or ``is_mpi_available``). Start ranks with ``python -m ember.distributed.run``.
See docs/distributed.md.
"""
from __future__ import annotations

from .availability import (is_available, is_gloo_available, is_mpi_available, is_nccl_available,
                           is_torchelastic_launched, is_ucc_available, is_xccl_available)
from .backend import Backend
from .collectives import (all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast, gather, irecv,
                          isend, recv, reduce, reduce_scatter_tensor, scatter, send)
from .constants import default_pg_timeout
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .process_group import ProcessGroup
from .reduce_op import ReduceOp
from .state import (GroupMember, destroy_process_group, get_backend, get_global_rank, get_group_rank,
                    get_process_group_ranks, get_rank, get_world_size, group, init_process_group,
                    is_initialized, new_group)
from .work import Work

__all__ = [
    "Backend", "DeviceMesh", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "GroupMember",
    "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_reduce", "barrier", "broadcast", "broadcast_object_list", "default_pg_timeout",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "irecv",
    "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "init_device_mesh", "is_torchelastic_launched", "is_ucc_available", "is_xccl_available", "isend",
    "new_group", "recv",
    "reduce", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]

_LAZY = {"DeviceMesh": ("device_mesh", "DeviceMesh"), "init_device_mesh": ("device_mesh", "init_device_mesh"),
         "device_mesh": ("device_mesh", None), "fsdp": ("fsdp", None), "checkpoint": ("checkpoint", None)}


def __getattr__(name: str):
    """The device mesh and the FSDP and checkpoint packages, imported when first asked for (as PyTorch's)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(f"{__name__}.{module_name}")
    return module if attribute is None else getattr(module, attribute)
