"""Rank 1 fails in the way argv[1] names while rank 0 waits in an all_reduce; rank 0 must not hang.

Modes: exit0 (leaves early, cleanly), exit3 (sys.exit(3)), raise (an uncaught exception), kill (SIGKILL).
"""
import os
import signal
import sys
import time

import ember
import ember.distributed as dist

mode = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
t = ember.ones(4)
dist.all_reduce(t)  # both ranks are up and connected
if rank == 1:
    if mode == "exit0":
        sys.exit(0)
    if mode == "exit3":
        sys.exit(3)
    if mode == "raise":
        raise RuntimeError("rank 1 failed on purpose")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
start = time.monotonic()
print(f"rank {rank} waiting", flush=True)
dist.all_reduce(t)
print(f"rank {rank} was not stopped after {time.monotonic() - start:.1f} s", flush=True)
