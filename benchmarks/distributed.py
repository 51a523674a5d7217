"""All-reduce bandwidth of ember.distributed's MPI engine, 1 KB to 64 MB of float32, on 2 ranks.

    python benchmarks/distributed.py [--ranks 2] [--repeats 20]

Run plainly, it starts itself on ``--ranks`` ranks through ``ember.distributed.run``. Each size is timed
``--repeats`` times (after a warm-up, each preceded by a barrier); the table gives the median, the 10th-90th
percentile spread, the bus bandwidth (NCCL's convention: 2(n-1)/n x bytes / time, comparable across rank
counts), and the same all-reduce done with mpi4py on a NumPy array, which is the engine's floor.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

SIZES = [2 ** k for k in range(10, 27, 2)]  # bytes: 1 KB, 4 KB, ..., 64 MB


def _time(run, barrier, repeats: int) -> np.ndarray:
    run()
    times = []
    for _ in range(repeats):
        barrier()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return np.array(times)


def measure(repeats: int) -> None:
    import ember
    import ember.distributed as dist
    from mpi4py import MPI
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD
    rows = []
    for size in SIZES:
        n = size // 4
        t = ember.ones(n)
        ember_times = _time(lambda: dist.all_reduce(t), dist.barrier, repeats)
        a = np.ones(n, np.float32)
        raw_times = _time(lambda: comm.Allreduce(MPI.IN_PLACE, a), comm.Barrier, repeats)
        rows.append((size, ember_times, raw_times))
    assert float(t[0]) == float(world) ** (repeats + 1)  # every timed call really reduced
    if rank == 0:
        factor = 2 * (world - 1) / world
        print(f"all_reduce (SUM, float32), MPI engine, {world} ranks, {repeats} repeats; "
              f"MPI: {MPI.Get_library_version().splitlines()[0]}")
        print("| size | median | p10-p90 | bus bandwidth | mpi4py median | mpi4py bus bandwidth |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for size, et, rt in rows:
            em, rm = np.median(et), np.median(rt)
            print(f"| {_bytes(size)} | {em * 1e6:,.0f} µs | {np.percentile(et, 10) * 1e6:,.0f}-"
                  f"{np.percentile(et, 90) * 1e6:,.0f} µs | {factor * size / em / 1e9:.2f} GB/s | "
                  f"{rm * 1e6:,.0f} µs | {factor * size / rm / 1e9:.2f} GB/s |")
    dist.destroy_process_group()


def _bytes(size: int) -> str:
    return f"{size // 2 ** 20} MB" if size >= 2 ** 20 else f"{size // 2 ** 10} KB"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    if "RANK" in os.environ:
        measure(args.repeats)
        return 0
    return subprocess.call([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(args.ranks),
                            os.path.abspath(__file__), "--repeats", str(args.repeats)])


if __name__ == "__main__":
    sys.exit(main())
