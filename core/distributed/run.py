"""``python -m ember.distributed.run``: torchrun's command line, starting the ranks through ``mpiexec``.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m ember.distributed.run --nnodes 2 --nproc-per-node 4 --hostfile hosts train.py

Each rank gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
MASTER_ADDR, MASTER_PORT, ...). The launcher forwards the ranks' output, and when a rank fails it reports
which one and how, and exits with that rank's code (128 + N for a rank killed by signal N).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

_PREFIX = "ember.distributed.run"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run", allow_abbrev=False,
                                description="Start a distributed Ember program, as torchrun does, through mpiexec.")
    p.add_argument("--nnodes", default="1", help="number of nodes (or MIN:MAX, of which MAX is used)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes per node: a number, 'cpu', 'gpu' or 'auto'")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's rank (must be 0 with MPI)")
    p.add_argument("--master-addr", "--master_addr", default=None, help="address of rank 0 (default 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--hostfile", default=None, help="mpiexec host file listing the nodes (one per line)")
    p.add_argument("--standalone", action="store_true", help="single-node job (accepted as torchrun does)")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default="", help="HOST:PORT, used as master addr/port")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static", help="accepted; MPI does the rendezvous")
    p.add_argument("--rdzv-id", "--rdzv_id", default=None, help="job id (TORCHELASTIC_RUN_ID)")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    p.add_argument("--role", default="default")
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the target as an executable")
    p.add_argument("--mpiexec", default=os.environ.get("EMBER_MPIEXEC"), help="mpiexec to use")
    p.add_argument("training_script", help="the script (or module, with -m) to run on every rank")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.module and args.no_python:
        p.error("--module and --no-python cannot be combined")
    if args.max_restarts:
        p.error("--max-restarts: restarting failed ranks is not supported on MPI (a failed rank ends the job)")
    return args


def nproc_per_node(value: str) -> int:
    if value in ("cpu", "auto", "gpu"):
        gpus = _gpu_count()
        if value == "gpu" or (value == "auto" and gpus):
            if not gpus:
                raise SystemExit(f"{_PREFIX}: --nproc-per-node gpu, but no CUDA device is visible")
            return gpus
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise SystemExit(f"{_PREFIX}: --nproc-per-node must be a number, 'cpu', 'gpu' or 'auto', got {value!r}")
    if n < 1:
        raise SystemExit(f"{_PREFIX}: --nproc-per-node must be at least 1, got {n}")
    return n


def build_command(args: argparse.Namespace, run_dir: str) -> tuple[list[str], dict[str, str]]:
    """The command that starts every rank, and the environment they share."""
    nnodes = int(str(args.nnodes).split(":")[-1])
    nproc = nproc_per_node(args.nproc_per_node)
    if nnodes > 1 and not args.hostfile:
        raise SystemExit(f"{_PREFIX}: --nnodes {nnodes} needs --hostfile listing the nodes: with MPI the job is "
                         f"started once, from node 0, and mpiexec starts the ranks on every node")
    if args.node_rank != 0:
        raise SystemExit(f"{_PREFIX}: --node-rank {args.node_rank}: with MPI, run the launcher once, on node 0, "
                         f"with --hostfile; mpiexec starts the other nodes' ranks itself (see docs/distributed.md)")
    addr, port = _master(args)
    mode = "--module" if args.module else "--no-python" if args.no_python else "--script"
    worker = [sys.executable, "-m", "ember.distributed._worker", mode, args.training_script,
              *args.training_script_args]
    shared = {"MASTER_ADDR": addr, "MASTER_PORT": str(port), "EMBER_RUN_DIR": run_dir,
              "EMBER_NPROC_PER_NODE": str(nproc), "GROUP_WORLD_SIZE": str(nnodes), "ROLE_NAME": args.role,
              "TORCHELASTIC_RUN_ID": args.rdzv_id or uuid.uuid4().hex[:12]}
    if nnodes * nproc == 1:
        return worker, shared  # one rank: no MPI launcher needed (MPI, if used, starts as a singleton)
    command = [_mpiexec(args), "-n", str(nnodes * nproc)]
    if args.hostfile:
        command += ["-f", args.hostfile, "-ppn", str(nproc)]
    for name, value in shared.items():
        command += ["-genv", name, value]
    return command + worker, shared


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="ember-run-") as run_dir:
        command, shared = build_command(args, run_dir)
        env = {**os.environ, **shared}
        code, banner = _run_forwarding(command, env)
        if code == 0:
            return 0
        report, code = failure_report(Path(run_dir), code, banner)
        print(report, file=sys.stderr, flush=True)
        return code


def _run_forwarding(command: list[str], env: dict[str, str]) -> tuple[int, dict[str, int]]:
    """Run ``command``, copying its output through; return its exit code and the signal mpiexec's failure
    banner names, if any."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    found: dict[str, int] = {}
    threads = [threading.Thread(target=_forward, args=(stream, sink, found), daemon=True)
               for stream, sink in ((process.stdout, sys.stdout), (process.stderr, sys.stderr))]
    for t in threads:
        t.start()
    previous = signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        code = process.wait()
    except KeyboardInterrupt:
        process.send_signal(signal.SIGINT)
        code = process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    for t in threads:
        t.join()
    return code, found


_BANNER = {"signal": re.compile(rb"EXIT STRING: .*\(signal (\d+)\)")}


def _forward(stream, sink, found: dict[str, int]) -> None:
    for line in iter(stream.readline, b""):
        for key, pattern in _BANNER.items():
            match = pattern.search(line)
            if match and key not in found:
                found[key] = int(match.group(1))
        sink.buffer.write(line)
        sink.flush()


def failure_report(run_dir: Path, code: int, banner: dict[str, int]) -> tuple[str, int]:
    """torchrun's failure summary: which rank failed, and how; and the exit code the launcher returns."""
    ranks = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in run_dir.glob("rank-*.json")}
    errors = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in run_dir.glob("rank-*.error")}
    lines = [f"{_PREFIX}: the job failed"]
    if errors:
        for rank, error in sorted(errors.items()):
            lines.append(f"  rank {rank}{_where(ranks.get(rank))}: {error['message']}")
        code = errors[min(errors)]["exitcode"]
    else:
        # mpiexec kills the other ranks at once, with the same signal, so which rank died first is not
        # known here; name every rank that did not finish, and the signal mpiexec reported.
        done = {int(p.stem.split("-")[1]) for p in run_dir.glob("rank-*.done")}
        unfinished = ", ".join(f"{rank}{_where(info)}" for rank, info in sorted(ranks.items())
                               if rank not in done) or "unknown"
        number = banner.get("signal", code - 128 if code > 128 else (-code if code < 0 else None))
        if number is not None:
            lines.append(f"  a rank was killed by signal {number} ({_signal_name(number)}); ranks that did not "
                         f"finish: {unfinished}")
            code = 128 + number
        else:
            lines.append(f"  a rank exited with code {code}; ranks that did not finish: {unfinished}")
    lines.append("  the other ranks were stopped")
    return "\n".join(lines), code


def _where(info: dict | None) -> str:
    return "" if info is None else f" (local_rank {info['local_rank']}, host {info['host']}, pid {info['pid']})"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _master(args: argparse.Namespace) -> tuple[str, int]:
    if args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":")
        return (host or args.rdzv_endpoint), int(port) if port.isdigit() else args.master_port
    if args.master_addr:
        return args.master_addr, args.master_port
    if args.hostfile:
        first = next((ln.split(":")[0].split()[0] for ln in Path(args.hostfile).read_text().splitlines()
                      if ln.strip() and not ln.lstrip().startswith("#")), None)
        if first:
            return first, args.master_port
    return "127.0.0.1", args.master_port


def _mpiexec(args: argparse.Namespace) -> str:
    candidates = [args.mpiexec, str(Path(sys.executable).parent / "mpiexec"), shutil.which("mpiexec")]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    raise SystemExit(f"{_PREFIX}: mpiexec was not found; install Ember's distributed extra "
                     f"(pip install 'ember[distributed]', which brings the mpich wheel) or pass --mpiexec")


def _gpu_count() -> int:
    try:
        import ember
        return ember.cuda.device_count()
    except Exception:  # noqa: BLE001 - no usable CUDA means no GPUs to count
        return 0


if __name__ == "__main__":
    sys.exit(main())
