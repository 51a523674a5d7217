"""The tensor collectives, with PyTorch's signatures and in-place semantics.

Each call checks its arguments, stages the tensors as the engine's arrays (host arrays for MPI), issues one
nonblocking engine operation under the group's issue lock, and returns a ``Work`` (``async_op=True``) or
waits for it. Finishing the work writes the results into the caller's tensors.
"""
from __future__ import annotations

from typing import Callable

from ..dispatch.schema.errors import DtypeError, ShapeError
from ..tensor import Tensor
from .process_group import ProcessGroup
from .reduce_op import RedOpType, ReduceOp, as_red_op
from .state import resolve
from .work import Pending, Work


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group reaches the barrier."""
    pg = resolve(group, "barrier")
    if pg is None:
        return None
    return _issue("barrier", pg, lambda: (pg.mpi.barrier(), []), async_op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy ``tensor`` from rank ``src`` into ``tensor`` on every other rank."""
    pg = resolve(group, "broadcast")
    if pg is None:
        return None
    _check_tensor("broadcast", tensor, "tensor")
    root = _group_rank(pg, "broadcast", src, group_src, "src")
    engine = pg.engine_for(tensor.device, "broadcast")

    def issue():
        array = engine.stage(tensor)
        commits = [] if pg.rank() == root else [engine.write_back(tensor, array)]
        return engine.broadcast(array, root), commits
    return _issue("broadcast", pg, issue, async_op)


def all_reduce(tensor: Tensor, op: RedOpType = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group; every rank's ``tensor`` holds the result."""
    pg = resolve(group, "all_reduce")
    if pg is None:
        return None
    op = _check_reduction("all_reduce", op, tensor)
    engine = pg.engine_for(tensor.device, "all_reduce")

    def issue():
        array = engine.stage(tensor)
        return engine.all_reduce(array, op), [engine.write_back(tensor, array)]
    return _issue("all_reduce", pg, issue, async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: RedOpType = ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Reduce ``tensor`` across the group into ``tensor`` on rank ``dst``; other ranks' tensors are unchanged."""
    pg = resolve(group, "reduce")
    if pg is None:
        return None
    op = _check_reduction("reduce", op, tensor)
    root = _group_rank(pg, "reduce", dst, group_dst, "dst")
    engine = pg.engine_for(tensor.device, "reduce")

    def issue():
        array = engine.stage(tensor)
        commits = [engine.write_back(tensor, array)] if pg.rank() == root else []
        return engine.reduce(array, root, op), commits
    return _issue("reduce", pg, issue, async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group=None, async_op: bool = False):
    """Every rank's ``tensor`` into ``tensor_list[rank]`` on every rank."""
    pg = resolve(group, "all_gather")
    if pg is None:
        return None
    _check_tensor("all_gather", tensor, "tensor")
    _check_list("all_gather", tensor_list, "tensor_list", pg.size(), tensor)
    engine = pg.engine_for(tensor.device, "all_gather")

    def issue():
        send = engine.stage(tensor)
        recv = engine.empty((pg.size(),) + tuple(send.shape), send)
        pending = engine.all_gather(send, recv)
        return pending, [_assign_each(engine, tensor_list, recv)]
    return _issue("all_gather", pg, issue, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False):
    """Every rank's ``input_tensor`` concatenated (rank order) into ``output_tensor`` on every rank."""
    pg = resolve(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _check_pair("all_gather_into_tensor", output_tensor, "output_tensor", input_tensor, "input_tensor")
    _check_numel("all_gather_into_tensor", output_tensor, input_tensor.numel() * pg.size(), pg.size())
    engine = pg.engine_for(input_tensor.device, "all_gather_into_tensor")

    def issue():
        send, recv = engine.stage(input_tensor), engine.stage(output_tensor)
        return engine.all_gather(send, recv), [engine.write_back(output_tensor, recv)]
    return _issue("all_gather_into_tensor", pg, issue, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: RedOpType = ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """Reduce ``input`` across the group and give rank ``r`` the ``r``-th equal chunk, in ``output``."""
    pg = resolve(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    _check_pair("reduce_scatter_tensor", output, "output", input, "input")
    op = _check_reduction("reduce_scatter_tensor", op, input)
    _check_numel("reduce_scatter_tensor", input, output.numel() * pg.size(), pg.size())
    engine = pg.engine_for(input.device, "reduce_scatter_tensor")

    def issue():
        send, recv = engine.stage(input), engine.stage(output)
        return engine.reduce_scatter(send, recv, op), [engine.write_back(output, recv)]
    return _issue("reduce_scatter_tensor", pg, issue, async_op)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (which alone passes a list)."""
    pg = resolve(group, "gather")
    if pg is None:
        return None
    root, is_root, engine = _rooted(pg, "gather", tensor, gather_list, "gather_list", dst, group_dst, "dst")

    def issue():
        send = engine.stage(tensor)
        recv = engine.empty((pg.size(),) + tuple(send.shape), send) if is_root else None
        commits = [_assign_each(engine, gather_list, recv)] if is_root else []
        return engine.gather(send, recv, root), commits
    return _issue("gather", pg, issue, async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None, group=None,
            async_op: bool = False, group_src: int | None = None):
    """``scatter_list[r]`` on rank ``src`` into ``tensor`` on rank ``r``."""
    pg = resolve(group, "scatter")
    if pg is None:
        return None
    root, is_root, engine = _rooted(pg, "scatter", tensor, scatter_list, "scatter_list", src, group_src, "src")

    def issue():
        recv = engine.stage(tensor)
        send = engine.stack([engine.stage(t) for t in scatter_list]) if is_root else None
        return engine.scatter(send, recv, root), [engine.write_back(tensor, recv)]
    return _issue("scatter", pg, issue, async_op)


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None):
    """Start sending ``tensor`` to rank ``dst``; the returned Work finishes when the buffer may be reused."""
    pg = resolve(group, "isend")
    if pg is None:
        return None
    _check_tensor("isend", tensor, "tensor")
    peer = _peer(pg, "isend", dst, group_dst, "dst")
    engine = pg.engine_for(tensor.device, "isend")
    return _issue("isend", pg, lambda: (engine.send(engine.stage(tensor), peer, tag), []), True)


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None)."""
    pg = resolve(group, "irecv")
    if pg is None:
        return None
    _check_tensor("irecv", tensor, "tensor")
    peer = None if src is None and group_src is None else _peer(pg, "irecv", src, group_src, "src")
    engine = pg.engine_for(tensor.device, "irecv")

    def issue():
        array = engine.stage(tensor)
        pending = engine.recv(array, peer, tag)
        return Pending(pending.test, lambda: pg.ranks[pending.finish()], pending.device_wait, pending.keep), \
            [engine.write_back(tensor, array)]
    return _issue("irecv", pg, issue, True)


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has left."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's global rank."""
    work = irecv(tensor, src, group, tag, group_src)
    return -1 if work is None else work.result()


# -- the one road every collective takes ------------------------------------------------------
def _issue(op_name: str, pg: ProcessGroup, issue: Callable[[], tuple[Pending, list]], async_op: bool):
    """Run ``issue`` (stage and start the operation) in the group's issue order; return or finish its Work."""
    pg.check_usable(op_name)
    with pg.issue_lock:
        pending, commits = issue()
    engine_finish = pending.finish

    def finish():
        result = engine_finish()
        for commit in commits:
            commit()
        return result
    work = Work(op_name, pg, Pending(pending.test, finish, pending.device_wait, pending.keep))
    if async_op:
        return work
    work.wait()
    return None


def _assign_each(engine, tensors: list[Tensor], stacked) -> Callable[[], None]:
    def assign() -> None:
        for i, t in enumerate(tensors):
            engine.assign(t, stacked[i])
    return assign


# -- argument checks ---------------------------------------------------------------------------
def _check_tensor(op_name: str, t, what: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op_name}: {what} must be an ember.Tensor, got {type(t).__name__}")


def _check_pair(op_name: str, out, out_name: str, inp, in_name: str) -> None:
    _check_tensor(op_name, out, out_name)
    _check_tensor(op_name, inp, in_name)
    if out.dtype != inp.dtype:
        raise DtypeError(f"{op_name}: {out_name} has dtype {out.dtype.name} but {in_name} has {inp.dtype.name}; "
                         f"they must match")
    if out.device != inp.device:
        raise ValueError(f"{op_name}: {out_name} is on {out.device} but {in_name} is on {inp.device}")


def _check_numel(op_name: str, t: Tensor, expected: int, size: int) -> None:
    if t.numel() != expected:
        raise ShapeError(f"{op_name}: with {size} ranks the tensor of shape {tuple(t.shape)} should have "
                         f"{expected} elements, got {t.numel()}")


def _rooted(pg: ProcessGroup, op_name: str, tensor: Tensor, tensors, list_name: str, rank, group_rank, what: str):
    """The checks of gather and scatter: a list of one tensor per rank on the root rank, and none elsewhere.
    Returns the root's group rank, whether this rank is the root, and the engine."""
    _check_tensor(op_name, tensor, "tensor")
    root = _group_rank(pg, op_name, rank, group_rank, what)
    is_root = pg.rank() == root
    if is_root:
        _check_list(op_name, tensors, list_name, pg.size(), tensor)
    elif tensors:
        role = "destination" if what == "dst" else "source"
        raise ValueError(f"{op_name}: Argument ``{list_name}`` must NOT be specified on non-{role} ranks.")
    return root, is_root, pg.engine_for(tensor.device, op_name)


def _check_list(op_name: str, tensors, what: str, size: int, like: Tensor) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        got = f"{len(tensors)} tensors" if isinstance(tensors, (list, tuple)) else repr(tensors)
        raise ValueError(f"{op_name}: {what} must be a list of {size} tensors (one per rank), got {got}")
    for i, t in enumerate(tensors):
        _check_tensor(op_name, t, f"{what}[{i}]")
        if t.dtype != like.dtype:
            raise DtypeError(f"{op_name}: {what}[{i}] has dtype {t.dtype.name}, expected {like.dtype.name}")
        if tuple(t.shape) != tuple(like.shape):
            raise ShapeError(f"{op_name}: {what}[{i}] has shape {tuple(t.shape)}, expected {tuple(like.shape)}")
        if t.device != like.device:
            raise ValueError(f"{op_name}: {what}[{i}] is on {t.device}, expected {like.device}")


def _check_reduction(op_name: str, op, tensor: Tensor) -> RedOpType:
    _check_tensor(op_name, tensor, "tensor")
    op = as_red_op(op, op_name)
    kind = tensor.dtype.kind
    if op is RedOpType.AVG and kind == "bool":
        raise DtypeError(f"{op_name}: Cannot use ReduceOp.AVG with boolean inputs (dtype bool)")
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and kind in ("float", "complex"):
        raise DtypeError(f"{op_name}: ReduceOp.{op.name} needs integer or bool tensors, got {tensor.dtype.name}")
    if kind == "complex" and op not in (RedOpType.SUM, RedOpType.AVG):  # PyTorch's ValueError and wording
        raise ValueError(f"{op_name} does not support {op.name} on complex tensors (dtype {tensor.dtype.name})")
    return op


def _group_rank(pg: ProcessGroup, op_name: str, rank: int | None, group_rank: int | None, what: str) -> int:
    """The group rank a call means by ``src``/``dst`` (global) or ``group_src``/``group_dst`` (default 0)."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{op_name}: pass {what} or group_{what}, not both")
    if rank is None:
        group_rank = 0 if group_rank is None else group_rank
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{op_name}: group_{what}={group_rank} is outside the group of {pg.size()} ranks")
        return group_rank
    if rank not in pg.ranks:
        raise ValueError(f"{op_name}: {what}={rank} is not a rank of the group (global ranks {pg.ranks})")
    return pg.ranks.index(rank)


def _peer(pg: ProcessGroup, op_name: str, rank: int | None, group_rank: int | None, what: str) -> int:
    if rank is None and group_rank is None:
        raise ValueError(f"{op_name}: {what} is required")
    peer = _group_rank(pg, op_name, rank, group_rank, what)
    if peer == pg.rank():
        raise ValueError(f"{op_name}: Invalid {'destination' if what == 'dst' else 'source'} rank: should not be "
                         f"the same as the rank of the current process.")
    return peer
