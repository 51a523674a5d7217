"""Process-group lifecycle: ``init_process_group``, ``new_group``, ``destroy_process_group`` and queries."""
from __future__ import annotations

import time
import warnings
from datetime import timedelta
from typing import Any

from . import rendezvous
from .backend import Backend, default_backend_string, device_backend_map
from .constants import resolve_timeout
from .errors import DistError
from .process_group import ProcessGroup
from .work import poll


class _State:
    default: ProcessGroup | None = None
    groups: list[ProcessGroup] = []


_state = _State()


class GroupMember:
    """``GroupMember.WORLD`` is the default group; ``NON_GROUP_MEMBER`` is what ``new_group`` returns to a
    rank outside the new group."""

    NON_GROUP_MEMBER = object()

    class _World:
        def __get__(self, obj, owner) -> ProcessGroup | None:
            return _state.default

    WORLD = _World()


group = GroupMember  # ``dist.group.WORLD``, as in PyTorch


def is_initialized() -> bool:
    return _state.default is not None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the default process group: the MPI world this process was started in (see ``rendezvous``).

    ``backend``: "mpi", "gloo" (runs on MPI), "nccl", a per-device string such as "cpu:gloo,cuda:nccl",
    or None for that default. ``timeout`` bounds every collective of the group (default 30 minutes, or
    ``EMBER_DIST_TIMEOUT`` seconds).
    """
    if _state.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise DistError("init_process_group: store-based rendezvous is not supported; Ember's ranks meet "
                        "through MPI (start them with python -m ember.distributed.run or mpiexec)")
    name = default_backend_string() if backend is None else str(Backend(backend))
    device_backends = device_backend_map(name)
    timeout = resolve_timeout(timeout)
    from .engines.mpi import MPIEngine, install_abort_on_uncaught_exception, world
    comm = world()
    rendezvous.check(init_method, world_size, rank, comm.Get_rank(), comm.Get_size())
    if comm.Get_size() > 1:
        install_abort_on_uncaught_exception()
    engine = MPIEngine(comm.Dup())
    pg = ProcessGroup(Backend(name), device_backends, engine, list(range(engine.size)), timeout,
                      group_name or "0", device_id)
    _state.default = pg
    _state.groups = [pg]


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free ``group``'s communicators, or every group's (and forget the default group) when None."""
    if group is None or group is _state.default:
        for pg in _state.groups:
            pg.close()
        _state.default, _state.groups = None, []
        return
    group.close()
    if group in _state.groups:
        _state.groups.remove(group)


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None):
    """A group of ``ranks`` (global ranks; all when None). Every rank of the default group must call it,
    in the same order; ranks outside get ``GroupMember.NON_GROUP_MEMBER``."""
    world_pg = default_group("new_group")
    members = sorted(set(range(world_pg.size()) if ranks is None else ranks))
    for r in members:
        if not 0 <= r < world_pg.size():
            raise ValueError(f"new_group: rank {r} is outside the world of {world_pg.size()} ranks")
    name = world_pg.backend if backend is None else str(Backend(backend))
    timeout = world_pg.timeout if timeout is None else resolve_timeout(timeout)
    _wait_for_everyone(world_pg, "new_group")  # a dead peer times out here, not inside the blocking split
    engine = world_pg.mpi.split(members)
    if engine is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(Backend(name), device_backend_map(name), engine, members, timeout,
                      group_desc or str(len(_state.groups)), device_id or world_pg.device_id)
    _state.groups.append(pg)
    return pg


def default_group(op_name: str) -> ProcessGroup:
    if _state.default is None:
        raise ValueError(f"{op_name}: Default process group has not been initialized, please make sure to call "
                         f"init_process_group.")
    return _state.default


def resolve(group, op_name: str) -> ProcessGroup | None:
    """The group a call names (None means the default group); None for a rank outside it, after a warning
    as in PyTorch."""
    if group is None:
        return default_group(op_name)
    if group is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {op_name} on global rank {get_rank()} which does not belong to the given group.",
                      stacklevel=3)
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op_name}: group must be a ProcessGroup from init_process_group/new_group, got "
                        f"{type(group).__name__}")
    return group


def get_rank(group=None) -> int:
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    pg = resolve(group, "get_rank")
    return pg.rank()


def get_world_size(group=None) -> int:
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group, "get_world_size").size()


def get_backend(group=None) -> Backend:
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("get_backend: invalid process group specified")
    return resolve(group, "get_backend").backend


def get_process_group_ranks(group) -> list[int]:
    return list(resolve(group, "get_process_group_ranks").ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = resolve(group, "get_global_rank")
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"get_global_rank: group rank {group_rank} is not part of a group of {pg.size()} ranks")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    pg = resolve(group, "get_group_rank")
    if global_rank not in pg.ranks:
        raise ValueError(f"get_group_rank: global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


def _wait_for_everyone(pg: ProcessGroup, op_name: str) -> None:
    with pg.issue_lock:
        pending = pg.mpi.barrier()
    if not poll(pending.test, time.monotonic() + pg.timeout.total_seconds()):
        raise pg.timed_out(op_name, True, None)
