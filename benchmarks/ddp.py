"""DistributedDataParallel on this machine: how much all-reduce time backward hides, and the 2-rank step's
efficiency against one rank on half the batch.

Per rank of a 2-rank job (one BLAS thread per rank, as torchrun sets), interleaved rounds time:
  - ``local``: forward + backward of the bare model on the rank's half batch (no communication);
  - ``ddp``: the same through DDP, up to the end of backward (every bucket all-reduced and written back);
  - ``comm``: the same buckets all-reduced one after another, blocking, with nothing else running;
and, inside ``ddp``, how long the end of backward waited for the all-reduces still in flight (``wait``).
Hidden share of communication = 1 - wait / comm: 1 when backward covered every all-reduce, 0 when they all
ran after it. ``ddp - local - wait`` is DDP's own work (copying gradients into buckets and back, scaling).
Efficiency = (one process, no DDP, full step on the half batch) / (2-rank DDP step): 1.0 is perfect weak
scaling. Medians over rounds; ranks start each round together (barrier).

    python benchmarks/ddp.py [--hidden 1024] [--layers 4] [--batch 64] [--rounds 30] [--gradient-as-bucket-view]
    python benchmarks/ddp.py --child ...     (one rank; started by the parent through mpiexec)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def build(args):
    import ember
    import ember.nn as nn

    ember.manual_seed(0)
    layers = [nn.Linear(args.features, args.hidden), nn.ReLU()]
    for _ in range(args.layers - 2):
        layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
    layers.append(nn.Linear(args.hidden, 10))
    return nn.Sequential(*layers)


def timed(fn, barrier) -> float:
    barrier()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def child(args) -> dict:
    import ember
    import ember.distributed as dist
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    half = args.batch // 2
    generator = ember.Generator().manual_seed(rank)
    x = ember.randn(half, args.features, generator=generator)
    y = ember.randint(0, 10, (half,), generator=generator)
    bare = build(args)

    def loss(model):
        return F.cross_entropy(model(x), y)

    def forward_backward(model):
        model.zero_grad()
        loss(model).backward()

    def step(model, optimizer):
        optimizer.zero_grad()
        loss(model).backward()
        optimizer.step()

    samples: dict = {}
    if world == 1:
        optimizer = ember.optim.SGD(bare.parameters(), lr=1e-3)
        calls = {"step": lambda: step(bare, optimizer)}
        barrier = lambda: None  # noqa: E731
    else:
        ddp = DistributedDataParallel(build(args), bucket_cap_mb=args.bucket_cap_mb,
                                      gradient_as_bucket_view=args.gradient_as_bucket_view)
        optimizer = ember.optim.SGD(ddp.parameters(), lr=1e-3)
        buffers = [bucket.buffer for bucket in ddp.reducer.buckets]

        waits: list = []

        def ddp_forward_backward():
            forward_backward(ddp)
            waits.append(ddp.reducer.last_wait_s)

        def all_reduce_buckets():
            for buffer in buffers:
                dist.all_reduce(buffer)

        calls = {"local": lambda: forward_backward(bare), "ddp": ddp_forward_backward,
                 "comm": all_reduce_buckets, "step": lambda: step(ddp, optimizer)}
        barrier = dist.barrier
        samples["buckets"] = [int(b.numel()) for b in buffers]
    for _ in range(3):  # warm-up: plans, caches, first-touch of buffers
        for fn in calls.values():
            fn()
    times: dict = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, fn in calls.items():
            times[name].append(timed(fn, barrier))
    medians = {name: statistics.median(values) for name, values in times.items()}
    if world > 1:
        medians["wait"] = statistics.median(waits[-args.rounds:])
    if world > 1:  # the slower rank sets the pace
        gathered = [None] * world
        dist.all_gather_object(gathered, medians)
        medians = {name: max(g[name] for g in gathered) for name in medians}
    samples.update(medians)
    samples["parameters"] = sum(p.numel() for p in bare.parameters())
    dist.destroy_process_group()
    return samples if rank == 0 else None


def launch(args, ranks: int, extra_env: dict) -> dict:
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec"
    options = {k.replace("_", "-"): v for k, v in vars(args).items() if k not in ("child", "async_progress")}
    flags = [f"--{k}" if v is True else f"--{k}={v}" for k, v in options.items() if v not in (None, False)]
    env = {**os.environ, **ONE_THREAD, **extra_env}
    done = subprocess.run([mpiexec, "-n", str(ranks), sys.executable, __file__, "--child", *flags], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark ranks failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(single: dict, two: dict, label: str) -> dict:
    hidden = 1 - two["wait"] / two["comm"]
    efficiency = single["step"] / two["step"]
    print(f"\n{label}")
    print(f"  parameters {two['parameters']:,} ({two['parameters'] * 4 / 2 ** 20:.1f} MiB of float32 gradients), "
          f"buckets (elements) {two['buckets']}")
    print(f"  forward+backward, bare model     {two['local'] * 1e3:8.2f} ms")
    print(f"  forward+backward through DDP     {two['ddp'] * 1e3:8.2f} ms")
    print(f"    of which waiting for all-reduce{two['wait'] * 1e3:8.2f} ms")
    print(f"    of which DDP's copies, scaling {(two['ddp'] - two['local'] - two['wait']) * 1e3:8.2f} ms")
    print(f"  all-reduce of the buckets alone  {two['comm'] * 1e3:8.2f} ms")
    print(f"  communication hidden by backward {hidden * 100:8.1f} %")
    print(f"  step, 1 process, half batch      {single['step'] * 1e3:8.2f} ms")
    print(f"  step, 2-rank DDP, half batch each{two['step'] * 1e3:8.2f} ms")
    print(f"  efficiency (weak scaling)        {efficiency * 100:8.1f} %")
    return {"hidden": hidden, "efficiency": efficiency, "single": single, "two_ranks": two}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64, help="global batch; each rank takes half")
    parser.add_argument("--bucket-cap-mb", dest="bucket_cap_mb", type=float, default=None,
                        help="DDP's bucket_cap_mb (default: PyTorch's, 25 MiB after a first bucket of 1 MiB)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--gradient-as-bucket-view", dest="gradient_as_bucket_view", action="store_true",
                        help="DDP's gradient_as_bucket_view (saves the copy back)")
    parser.add_argument("--async-progress", dest="async_progress", action="store_true",
                        help="also measure with MPICH's progress thread (MPICH_ASYNC_PROGRESS=1)")
    args = parser.parse_args()
    if args.child:
        samples = child(args)
        if samples is not None:  # rank 0 speaks for the job
            print(json.dumps(samples))
        return
    single = launch(args, 1, {})
    results = {"default": report(single, launch(args, 2, {}), "MPI progress inside MPI calls (default)")}
    if args.async_progress:
        results["async_progress"] = report(single, launch(args, 2, {"MPICH_ASYNC_PROGRESS": "1"}),
                                           "MPICH progress thread (MPICH_ASYNC_PROGRESS=1)")
    print(json.dumps({k: {"hidden": v["hidden"], "efficiency": v["efficiency"]} for k, v in results.items()}))


if __name__ == "__main__":
    main()
