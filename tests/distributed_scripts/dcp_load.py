"""At 2 ranks: load a checkpoint saved at 4 ranks (argv[1]) and one saved by a single process from plain
tensors (argv[2]) into other pieces; ShardedTensor.full_tensor; errors agreed on by every rank."""
import sys

import dcp_common as c

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.sharded_tensor import ShardedTensor

saved_at_4, saved_plain = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
checks = c.Checks()
check, raises = checks.check, checks.raises


target = c.state_dict(None, rank, c.BOUNDS_2)
dcp.load(target, checkpoint_id=saved_at_4)
check("resharded 4 -> 2", c.mismatches(target, 2, rank, c.BOUNDS_2) == [])
for key, value in c.leaves(target).items():
    if isinstance(value, ShardedTensor):
        check(f"full_tensor of {key}", value.full_tensor().equal(c.full(key, 2)))

target = c.state_dict(None, rank, c.BOUNDS_2)
dcp.load(target, checkpoint_id=saved_plain)
check("plain tensors -> pieces at 2 ranks", c.mismatches(target, 3, rank, c.BOUNDS_2) == [])

start, stop = [(0, 3), (5, 9)][rank]
gap = ShardedTensor(ember.arange(9.)[start:stop], [9], start)
raises("full_tensor with a gap", ValueError, "leave element 3 of the global shape (9,)", gap.full_tensor)

# One rank's error raises on every rank: the others get a CheckpointException naming it.
bad = c.state_dict(None, rank, c.BOUNDS_2)
if rank == 1:
    bad["model"]["w"] = ShardedTensor(ember.zeros(5), [7, 5], 30)
expected_error = (ValueError, "Size mismatch between saved ember.Size([5, 7]) and current: ember.Size([7, 5])") \
    if rank == 1 else (dcp.CheckpointException, "rank 1: ValueError: load: Size mismatch")
raises("a mismatch on one rank", *expected_error, lambda: dcp.load(bad, checkpoint_id=saved_at_4))
raises("a missing key on every rank", RuntimeError, "Missing key in checkpoint state_dict: model.extra",
       lambda: dcp.load({"model": {"extra": ember.zeros(1)}}, checkpoint_id=saved_at_4))

print(checks.summary("dcp_load", rank), flush=True)
dist.destroy_process_group()
