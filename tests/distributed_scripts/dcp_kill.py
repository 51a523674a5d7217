"""At 2 ranks: save a checkpoint into argv[1], then save again while rank 1 kills itself (SIGKILL) in the
middle of writing its data file. The test then checks, in a later process, that the first save still loads."""
import os
import signal
import sys

import dcp_common as c

import ember.distributed as dist
import ember.distributed.checkpoint as dcp


class KillsItsWriter:
    """A value whose serialization (done while its rank writes its data file) kills that rank."""

    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGKILL)


path = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
bounds = {key: [(0, stop // 2), (stop // 2, stop)] for key, stop in
          ((k, c.full(k, None).numel()) for k in c.BOUNDS_2)}
dcp.save(c.state_dict(1, rank, bounds), checkpoint_id=path)
dist.barrier()
print(f"dcp_kill rank {rank}: first save committed", flush=True)
second = c.state_dict(2, rank, bounds)
if rank == 1:
    second["zz_last"] = KillsItsWriter()  # after rank 1's pieces, so its file is half written
dcp.save(second, checkpoint_id=path)
print(f"dcp_kill rank {rank}: the second save finished, which it must not", flush=True)
