"""A program written for torchrun, with only ``import torch`` swapped for ``import ember``."""
import os
import sys

import ember
import ember.distributed as dist

backend = sys.argv[1] if len(sys.argv) > 1 else "gloo"
dist.init_process_group(backend, init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
t = ember.ones(3) * (rank + 1)
dist.all_reduce(t)
print(f"rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']} "
      f"local_world {os.environ['LOCAL_WORLD_SIZE']} group_rank {os.environ['GROUP_RANK']} "
      f"master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} sum {t.tolist()}", flush=True)
dist.destroy_process_group()
