"""FSDP against DDP on this machine: per-rank memory, step time and communication of one GPT's training.

    python benchmarks/fsdp.py [--ranks 1,2,4] [--size 256] [--layers 4] [--batch 4] [--steps 20] [--json PATH]

Run plainly, it starts itself once per rank count through ``python -m ember.distributed.run`` (one BLAS
thread per rank, as torchrun sets) and prints markdown tables; ``benchmarks/fsdp_rank.py`` says what each
rank measures. The model is ``examples/gpt.py``'s GPT ``--size`` wide and ``--layers`` deep, trained with
AdamW on ``--batch`` sequences of 32 tokens per rank, so parameters, gradients and optimizer state dominate
memory. Modes: DDP, and FSDP with FULL_SHARD, SHARD_GRAD_OP and NO_SHARD (one unit per block plus the root).

- Memory, per rank count, the largest over the ranks: (a) steady, what is held between steps; (b) peak,
  the high-water mark during one step; both above the baseline before the model was built, measured with
  ``tracemalloc``, and as a ratio to DDP at the same rank count. FULL_SHARD's (a) should approach 1/N of DDP's.
- Step time at 2 ranks: median and 10th-90th percentile of ``--steps`` steps (each the slowest rank's),
  after warm-up, modes interleaved, and the ratio of the medians to DDP's.
- Communication: bytes per rank contributed to each collective in one training step (the input tensors).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from fsdp_rank import MODES, Job, run

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
TIMED_RANKS = 2
MIB = 2 ** 20
COLLECTIVE_ORDER = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", "broadcast")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", default="1,2,4", help="rank counts to measure memory and communication at")
    p.add_argument("--size", type=int, default=256, help="the GPT's width (n_embd); heads of 64")
    p.add_argument("--layers", type=int, default=4, help="transformer blocks (one FSDP unit each)")
    p.add_argument("--batch", type=int, default=4, help="sequences of 32 tokens per rank")
    p.add_argument("--warmup", type=int, default=3, help="steps before anything is measured")
    p.add_argument("--steps", type=int, default=20, help="timed steps per mode (at 2 ranks)")
    p.add_argument("--json", default=None, help="also write the measurements to this file")
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)  # a rank job's result file
    p.add_argument("--time", action="store_true", help=argparse.SUPPRESS)  # a rank job also times steps
    args = p.parse_args(argv)
    try:
        args.rank_counts = [int(n) for n in args.ranks.split(",")]
    except ValueError:
        args.rank_counts = []
    if not args.rank_counts or min(args.rank_counts) < 1:
        p.error(f"--ranks takes positive rank counts separated by commas, got {args.ranks!r}")
    if args.size < 1 or args.size % max(1, args.size // 64):
        p.error(f"--size must split into heads of about 64 (a multiple of 64, or below 64), got {args.size}")
    if args.steps < 1 or args.warmup < 1:
        p.error("--steps and --warmup must be at least 1")
    return args


def job_of(args: argparse.Namespace) -> Job:
    return Job(width=args.size, layers=args.layers, batch=args.batch, warmup=args.warmup, steps=args.steps)


def rank_main(args: argparse.Namespace) -> None:
    """One rank of a job: measure, and on rank 0 write everything to ``--out``."""
    import ember.distributed as dist

    dist.init_process_group("gloo")
    try:
        result = run(job_of(args), args.time)
        if result is not None:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(result, f)
    finally:
        dist.destroy_process_group()


def launch(args: argparse.Namespace, ranks: int) -> dict:
    """Run the measurements on ``ranks`` ranks; the job's result (from rank 0)."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "result.json")
        flags = [f"--size={args.size}", f"--layers={args.layers}", f"--batch={args.batch}",
                 f"--warmup={args.warmup}", f"--steps={args.steps}", f"--out={out}"]
        flags += ["--time"] if ranks == TIMED_RANKS else []
        command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(ranks),
                   os.path.abspath(__file__), *flags]
        done = subprocess.run(command, env={**os.environ, **ONE_THREAD}, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"fsdp benchmark: the {ranks}-rank job failed (exit {done.returncode}):\n"
                               f"{done.stdout}\n{done.stderr}")
        with open(out, encoding="utf-8") as f:
            return json.load(f)


# -- the report --------------------------------------------------------------------------------------------
def _mib(n: float) -> str:
    return f"{n / MIB:,.2f} MiB"


def _worst(result: dict, mode: str, key: str) -> int:
    return max(rank[key] for rank in result["memory"][mode])


def _header(results: list[dict], suffix: str = "") -> list[str]:
    """A markdown header: the mode, then one right-aligned column per rank count."""
    names = [f"{r['ranks']} rank{'s' * (r['ranks'] > 1)}{suffix}" for r in results]
    return ["| mode | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(results)]


def memory_table(results: list[dict], key: str) -> list[str]:
    """One row per mode, one column per rank count: the largest ``key`` bytes over the ranks, and x DDP."""
    lines = _header(results)
    for mode in MODES:
        cells = []
        for r in results:
            value, ddp = _worst(r, mode, key), _worst(r, "DDP", key)
            cells.append(f"{_mib(value)} ({value / ddp:.2f}x)")
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return lines


def phases_table(results: list[dict]) -> list[str]:
    lines = _header(results, ": forward+backward / optimizer step")
    for mode in MODES:
        cells = [f"{_mib(_worst(r, mode, 'peak_backward'))} / {_mib(_worst(r, mode, 'peak_optimizer'))}"
                 for r in results]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return lines


def checks_table(results: list[dict]) -> list[str]:
    """Rank 0's loss after the measured step and its difference from DDP's (the modes train the same model on
    the same batches, so only rounding should separate them), and the bytes still held once the model and
    optimizer are dropped (the largest over the ranks)."""
    lines = _header(results, ": loss (- DDP's), retained")
    for mode in MODES:
        cells = []
        for r in results:
            loss, ddp = r["memory"][mode][0]["loss"], r["memory"]["DDP"][0]["loss"]
            cells.append(f"{loss:.6f} ({loss - ddp:+.1e}), {_worst(r, mode, 'retained') / MIB:,.2f} MiB")
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return lines


def time_table(result: dict) -> list[str]:
    lines = ["| mode | median | p10-p90 | x DDP (medians) |", "| --- | ---: | ---: | ---: |"]
    ddp = float(np.median(result["step_s"]["DDP"]))
    for mode in MODES:
        steps = np.array(result["step_s"][mode])
        median = float(np.median(steps))
        lines.append(f"| {mode} | {median * 1e3:,.1f} ms | {np.percentile(steps, 10) * 1e3:,.1f}-"
                     f"{np.percentile(steps, 90) * 1e3:,.1f} ms | {median / ddp:.2f}x |")
    return lines


def comm_table(result: dict) -> list[str]:
    """Per mode and collective, the bytes of the inputs and the number of calls (the largest over the ranks;
    every rank makes the same calls)."""
    per_mode = {mode: _comm_of(result, mode) for mode in MODES}
    names = [n for n in COLLECTIVE_ORDER if any(n in c for c in per_mode.values())]
    names += sorted({n for c in per_mode.values() for n in c} - set(names))
    lines = ["| mode | " + " | ".join(names) + " | total | x DDP |", "| --- |" + " ---: |" * (len(names) + 2)]
    ddp_total = sum(b for b, _ in per_mode["DDP"].values())
    for mode, counts in per_mode.items():
        total = sum(b for b, _ in counts.values())
        cells = [f"{_mib(counts[n][0])} ({counts[n][1]})" if n in counts else "-" for n in names]
        lines.append(f"| {mode} | " + " | ".join(cells) + f" | {_mib(total)} | {total / ddp_total:.2f}x |")
    return lines


def _comm_of(result: dict, mode: str) -> dict[str, tuple[int, int]]:
    names = {n for rank in result["memory"][mode] for n in rank["comm"]}
    return {n: (max(rank["comm"].get(n, {}).get("bytes", 0) for rank in result["memory"][mode]),
                max(rank["comm"].get(n, {}).get("calls", 0) for rank in result["memory"][mode])) for n in names}


def report(args: argparse.Namespace, results: list[dict]) -> str:
    params = results[0]["parameters"]
    lines = [f"GPT: width {args.size}, {args.layers} blocks, {params:,} parameters; batch {args.batch}x32 tokens "
             f"per rank; AdamW; fp32. Parameters + gradients + AdamW's two moments of one replica = 16 B x "
             f"{params:,} = {_mib(16 * params)} (DDP adds its gradient buckets).", "",
             "Memory (a), steady: held between steps, largest over the ranks (x DDP at the same rank count)", ""]
    lines += memory_table(results, "steady")
    lines += ["", "Memory (b), peak during one step, largest over the ranks (x DDP at the same rank count)", ""]
    lines += memory_table(results, "peak")
    lines += ["", "Where the peak is: forward + backward, and the optimizer's step (largest over the ranks)", ""]
    lines += phases_table(results)
    lines += ["", "Checks: loss after the measured step (rank 0), and memory still held after the model is dropped", ""]
    lines += checks_table(results)
    for result in results:
        if result["step_s"]:
            lines += ["", f"Step time, {result['ranks']} ranks on cpu, {args.steps} steps after {args.warmup} "
                      "warm-up (each step: the slowest rank)", ""]
            lines += time_table(result)
    for result in results:
        if result["ranks"] > 1:
            lines += ["", f"Communication per rank per step, {result['ranks']} ranks: bytes of the input tensors "
                      "(calls); a ring sends (N-1) x an all-gather's input, (N-1)/N x a reduce-scatter's and "
                      "2(N-1)/N x an all-reduce's", ""]
            lines += comm_table(result)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "RANK" in os.environ:
        rank_main(args)
        return 0
    results = []
    for ranks in args.rank_counts:
        print(f"running on {ranks} rank(s)...", file=sys.stderr, flush=True)
        results.append(launch(args, ranks))
    print(report(args, results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": {k: v for k, v in vars(args).items() if k not in ("out", "time", "json")},
                       "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
