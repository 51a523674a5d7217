"""Every collective on every dtype, checked against NumPy on each rank (run with 2 or more ranks).

Usage: collectives.py DEVICE   (cpu, or opencl: its tensors travel through host copies)
"""
import sys
import warnings

import numpy as np

import ember
import ember.distributed as dist
from ember.dispatch import registry
from ember.dispatch.schema.dtypes import ALL_DTYPES

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
dtypes = [d for d in ALL_DTYPES if d in registry.get_backend(device).supported_dtypes(0)]
checks = 0


def values(r: int, dt, shape=(2, 3)) -> np.ndarray:
    """Rank ``r``'s data: small integers, exact in every dtype (bool: a rank-dependent pattern; complex: a
    rank-dependent imaginary part too)."""
    base = np.arange(int(np.prod(shape))).reshape(shape)
    if dt == ember.bool:
        return (base + r) % 3 == 0
    real = (base % 5 + r + 1).astype(np.float64)
    return real + 1j * (base % 3 - r) if dt.is_complex else real


def make(array: np.ndarray, dt) -> ember.Tensor:
    return ember.tensor(array.tolist(), dtype=dt, device=device)


def check(name: str, t: ember.Tensor, expected: np.ndarray) -> None:
    global checks
    got = np.asarray(t.cpu().tolist(), dtype=bool if t.dtype == ember.bool else
                     np.complex128 if t.dtype.is_complex else np.float64)
    want = np.asarray(expected).astype(got.dtype)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"rank {rank}: {name} on {t.dtype} {device}: got {got.tolist()}, want {want.tolist()}")
    checks += 1


def reduced(op, dt, arrays):
    stack = np.stack(arrays)
    if dt == ember.bool:
        return {dist.ReduceOp.SUM: stack.any(0), dist.ReduceOp.MAX: stack.any(0),
                dist.ReduceOp.PRODUCT: stack.all(0), dist.ReduceOp.MIN: stack.all(0)}[op]
    result = {dist.ReduceOp.SUM: stack.sum(0), dist.ReduceOp.AVG: stack.sum(0) / world,
              dist.ReduceOp.MAX: stack.max(0), dist.ReduceOp.MIN: stack.min(0),
              dist.ReduceOp.PRODUCT: stack.prod(0)}[op]
    return np.trunc(result) if op == dist.ReduceOp.AVG and dt.kind == "int" else result


for dt in dtypes:
    everyone = [values(r, dt) for r in range(world)]
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
    ops += [] if dt == ember.bool else [dist.ReduceOp.AVG]
    if dt.is_complex:  # PyTorch reduces complex tensors by SUM and AVG only, and refuses the others
        for op in ops[1:4]:
            try:
                dist.all_reduce(make(everyone[rank], dt), op=op)
            except ValueError as exc:
                assert "does not support" in str(exc) and "complex" in str(exc), exc
            else:
                raise AssertionError(f"all_reduce {op} on {dt} was not refused")
        ops = [dist.ReduceOp.SUM, dist.ReduceOp.AVG]
    for op in ops:
        t = make(everyone[rank], dt)
        dist.all_reduce(t, op=op)
        check(f"all_reduce {op}", t, reduced(op, dt, everyone))
        t = make(everyone[rank], dt)
        dist.reduce(t, dst=world - 1, op=op)
        check(f"reduce {op}", t, reduced(op, dt, everyone) if rank == world - 1 else everyone[rank])
        out = make(np.zeros((1, 3), bool if dt == ember.bool else complex if dt.is_complex else float), dt)
        stacked = np.concatenate([values(r, dt, (world, 3)) for r in range(world)])
        dist.reduce_scatter_tensor(out, make(values(rank, dt, (world, 3)), dt), op=op)
        check(f"reduce_scatter_tensor {op}", out,
              reduced(op, dt, [values(r, dt, (world, 3)) for r in range(world)])[rank:rank + 1])
        del stacked

    # in place through a view: the base tensor sees the result
    base = make(np.stack(everyone), dt) if world > 1 else make(everyone[0][None], dt)
    row = base[rank]
    view_op = dist.ReduceOp.SUM if dt.is_complex else dist.ReduceOp.MAX
    dist.all_reduce(row, op=view_op)
    check("all_reduce on a view", base[rank], reduced(view_op, dt, [a for a in everyone]))
    # a non-contiguous view
    t = make(everyone[rank].T.copy(), dt).T
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    check("all_reduce non-contiguous", t, reduced(dist.ReduceOp.SUM, dt, everyone))

    t = make(everyone[rank], dt)
    dist.broadcast(t, src=1 % world)
    check("broadcast", t, everyone[1 % world])

    outs = [make(np.zeros((2, 3)), dt) for _ in range(world)]
    dist.all_gather(outs, make(everyone[rank], dt))
    for r in range(world):
        check("all_gather", outs[r], everyone[r])

    out = make(np.zeros((2 * world, 3)), dt)
    dist.all_gather_into_tensor(out, make(everyone[rank], dt))
    check("all_gather_into_tensor", out, np.concatenate(everyone))

    gathered = [make(np.zeros((2, 3)), dt) for _ in range(world)] if rank == 0 else None
    dist.gather(make(everyone[rank], dt), gathered, dst=0)
    if rank == 0:
        for r in range(world):
            check("gather", gathered[r], everyone[r])

    t = make(np.zeros((2, 3)), dt)
    dist.scatter(t, [make(everyone[r], dt) for r in range(world)] if rank == 0 else None, src=0)
    check("scatter", t, everyone[rank])

    if world > 1:
        peer = (rank + 1) % world
        t = make(np.zeros((2, 3)), dt)
        if rank == 0:
            dist.send(make(everyone[0], dt), dst=1)
        elif rank == 1:
            assert dist.recv(t) == 0  # any source: returns the sender
            check("send/recv", t, everyone[0])
        t = make(np.zeros((2, 3)), dt)
        sent = dist.isend(make(everyone[rank], dt), dst=peer, tag=7)
        got = dist.irecv(t, src=(rank - 1) % world, tag=7)
        sent.wait()
        got.wait()
        check("isend/irecv", t, everyone[(rank - 1) % world])

    t = make(everyone[rank], dt)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed() and work.is_success()
    check("async all_reduce", t, reduced(dist.ReduceOp.SUM, dt, everyone))

# async: several operations in flight at once, waited in reverse order
tensors = [ember.full((1000,), float(rank + i), device=device) for i in range(4)]
works = [dist.all_reduce(t, async_op=True) for t in tensors]
for w in reversed(works):
    w.wait()
for i, t in enumerate(tensors):
    check("overlapping async all_reduce", t, np.full(1000, sum(r + i for r in range(world)), float))
assert isinstance(dist.barrier(async_op=True), dist.Work)

# async with the caller's input dropped at once (as FSDP drops a reduced gradient): the Work keeps it alive
# while MPI reads it, so new allocations cannot take its memory (mpi4py keeps no reference of its own)
size = 1 << 20
out = ember.empty(size // world, device=device)
work = dist.reduce_scatter_tensor(out, ember.full((size,), float(rank + 1), device=device), async_op=True)
gathered = ember.empty(size * world, device=device)
gather_work = dist.all_gather_into_tensor(gathered, ember.full((size,), float(rank), device=device), async_op=True)
junk = [ember.full((size,), 1e30, device=device) for _ in range(4)]
work.wait()
gather_work.wait()
for name, got, expected in (("reduce_scatter_tensor", out, np.full(size // world, sum(range(1, world + 1)))),
                            ("all_gather_into_tensor", gathered, np.repeat(np.arange(world), size))):
    error = float(np.abs(got.cpu().numpy() - expected).max())
    assert error == 0, f"async {name} of a dropped input on {device}: max error {error:.3g}"
    checks += 1
del junk

# object collectives
objects = [None] * world
dist.all_gather_object(objects, {"rank": rank, "data": list(range(rank + 1))})
assert objects == [{"rank": r, "data": list(range(r + 1))} for r in range(world)], objects
payload = [f"from {rank}", (rank, 2.5), None] if rank == 0 else [0, 0, 0]
dist.broadcast_object_list(payload, src=0)
assert payload == ["from 0", (0, 2.5), None], payload
gathered = [None] * world if rank == 0 else None
dist.gather_object("x" * (rank + 3), gathered, dst=0)
assert rank != 0 or gathered == ["x" * (r + 3) for r in range(world)], gathered
received = [None]
dist.scatter_object_list(received, [{"to": r} for r in range(world)] if rank == 0 else None, src=0)
assert received == [{"to": rank}], received
checks += 4

# groups: a group of every rank but 0, used by its members only
sub = dist.new_group(list(range(1, world)))
if rank == 0:
    assert sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(ember.ones(2, device=device), group=sub) is None
    assert any("does not belong to the given group" in str(w.message) for w in caught)
else:
    assert dist.get_rank(sub) == rank - 1 and dist.get_world_size(sub) == world - 1
    assert dist.get_process_group_ranks(sub) == list(range(1, world))
    t = ember.full((3,), float(rank), device=device)
    dist.all_reduce(t, group=sub)
    check("all_reduce on a new_group", t, np.full(3, sum(range(1, world)), float))
    t = ember.full((3,), float(rank), device=device)
    dist.broadcast(t, src=world - 1, group=sub)  # src is a global rank
    check("broadcast on a new_group", t, np.full(3, world - 1, float))
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: {checks} checks passed on {device}", flush=True)
