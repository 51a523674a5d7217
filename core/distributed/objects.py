"""Collectives of picklable Python objects, as PyTorch has them: pickled to bytes, moved by the MPI engine.

Every group has an MPI communicator (it also bootstraps NCCL), so objects always travel through host memory.
As in PyTorch, unpickling runs code: use these only between ranks that trust each other.
"""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from .collectives import _group_rank
from .process_group import ProcessGroup
from .state import resolve
from .work import Pending, Work


def broadcast_object_list(object_list: list[Any], src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank by those of rank ``src``."""
    pg = resolve(group, "broadcast_object_list")
    if pg is None:
        return
    root = _group_rank(pg, "broadcast_object_list", src, group_src, "src")
    is_root = pg.rank() == root
    payloads = [_dumps(o) for o in object_list] if is_root else []
    sizes = np.array([len(p) for p in payloads] if is_root else [0] * len(object_list), dtype=np.int64)
    _run(pg, "broadcast_object_list", lambda: pg.mpi.broadcast(sizes, root))
    data = np.frombuffer(b"".join(payloads), np.uint8).copy() if is_root else np.empty(int(sizes.sum()), np.uint8)
    _run(pg, "broadcast_object_list", lambda: pg.mpi.broadcast(data, root))
    if not is_root:
        object_list[:] = _split(data, sizes)


def all_gather_object(object_list: list[Any], obj: Any, group=None) -> None:
    """``object_list[r]`` becomes rank ``r``'s ``obj``, on every rank."""
    pg = resolve(group, "all_gather_object")
    if pg is None:
        return
    _check_output_list("all_gather_object", object_list, pg.size())
    object_list[:] = _gather_all(pg, "all_gather_object", _dumps(obj))


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """``object_gather_list[r]`` on rank ``dst`` becomes rank ``r``'s ``obj``."""
    pg = resolve(group, "gather_object")
    if pg is None:
        return
    root = _group_rank(pg, "gather_object", dst, group_dst, "dst")
    if pg.rank() == root:
        _check_output_list("gather_object", object_gather_list, pg.size())
    elif object_gather_list is not None:
        raise ValueError("gather_object: Argument ``object_gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    payload = np.frombuffer(_dumps(obj), np.uint8).copy()
    sizes = np.empty(pg.size(), np.int64) if pg.rank() == root else None
    _run(pg, "gather_object", lambda: pg.mpi.gather(np.array([payload.size], np.int64), sizes, root))
    # Equal-sized slots make the variable-length payloads one fixed-size gather.
    width = np.array([0 if sizes is None else int(sizes.max())], np.int64)
    _run(pg, "gather_object", lambda: pg.mpi.broadcast(width, root))
    padded = np.zeros(int(width[0]), np.uint8)
    padded[:payload.size] = payload
    slots = np.empty((pg.size(), int(width[0])), np.uint8) if pg.rank() == root else None
    _run(pg, "gather_object", lambda: pg.mpi.gather(padded, slots, root))
    if pg.rank() == root:
        object_gather_list[:] = [pickle.loads(slots[r, :sizes[r]].tobytes()) for r in range(pg.size())]


def scatter_object_list(scatter_object_output_list: list[Any], scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """``scatter_object_output_list[0]`` on rank ``r`` becomes ``scatter_object_input_list[r]`` of rank ``src``."""
    pg = resolve(group, "scatter_object_list")
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("scatter_object_list: Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    root = _group_rank(pg, "scatter_object_list", src, group_src, "src")
    is_root = pg.rank() == root
    if is_root:
        _check_output_list("scatter_object_list", scatter_object_input_list, pg.size())
        payloads = [_dumps(o) for o in scatter_object_input_list]
    sizes = np.array([len(p) for p in payloads] if is_root else [0] * pg.size(), np.int64)
    _run(pg, "scatter_object_list", lambda: pg.mpi.broadcast(sizes, root))
    width = int(sizes.max())
    slots = np.zeros((pg.size(), width), np.uint8) if is_root else None
    if is_root:
        for r, p in enumerate(payloads):
            slots[r, :len(p)] = np.frombuffer(p, np.uint8)
    mine = np.empty(width, np.uint8)
    _run(pg, "scatter_object_list", lambda: pg.mpi.scatter(slots, mine, root))
    scatter_object_output_list[0] = pickle.loads(mine[:sizes[pg.rank()]].tobytes())


def _gather_all(pg: ProcessGroup, op_name: str, payload_bytes: bytes) -> list[Any]:
    payload = np.frombuffer(payload_bytes, np.uint8)
    sizes = np.empty(pg.size(), np.int64)
    _run(pg, op_name, lambda: pg.mpi.all_gather(np.array([payload.size], np.int64), sizes))
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[:payload.size] = payload
    slots = np.empty((pg.size(), padded.size), np.uint8)
    _run(pg, op_name, lambda: pg.mpi.all_gather(padded, slots))
    return [pickle.loads(slots[r, :sizes[r]].tobytes()) for r in range(pg.size())]


def _run(pg: ProcessGroup, op_name: str, issue) -> None:
    """Issue one engine operation in the group's order and wait for it, within the group's timeout."""
    pg.check_usable(op_name)
    with pg.issue_lock:
        pending: Pending = issue()
    Work(op_name, pg, pending).wait()


def _dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _split(data: np.ndarray, sizes: np.ndarray) -> list[Any]:
    out, start = [], 0
    for size in sizes:
        out.append(pickle.loads(data[start:start + int(size)].tobytes()))
        start += int(size)
    return out


def _check_output_list(op_name: str, objects, size: int) -> None:
    if not isinstance(objects, list) or len(objects) != size:
        got = f"a list of {len(objects)}" if isinstance(objects, list) else repr(objects)
        raise ValueError(f"{op_name}: expected a list of {size} items (one per rank), got {got}")
