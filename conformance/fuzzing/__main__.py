"""``python -m ember.conformance.fuzzing --backend NAME --seconds S --seed N``: a fuzz campaign on one backend,
ending with its summary line (crashes, hangs, vague, off-type and internal errors; against PyTorch, where it is
installed: mismatches, calls accepted where PyTorch rejects them, and the reverse).

Both parts run in a child process, so that a crash (a segfault in a kernel, an abort in a driver) is counted,
named by the target it happened in, and the campaign goes on from the next target.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time

from .campaign import Tally
from .targets import Report
from .verdicts import Finding

PHASES = ("fuzz", "pytorch")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ember.conformance.fuzzing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu", help="the device to fuzz (cpu, opencl, cuda:1, template, ...)")
    parser.add_argument("--seconds", type=float, default=300.0, help="time for the Ember-only fuzzing")
    parser.add_argument("--seed", type=int, default=0, help="draws differ from seed to seed, and repeat for one")
    parser.add_argument("--examples", type=int, default=8, help="calls per target before moving to the next")
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds a call may run before it is a hang")
    parser.add_argument("--pytorch-calls", type=int, default=6,
                        help="differential calls per PyTorch overload (0: skip the comparison with PyTorch)")
    parser.add_argument("--pytorch-seconds", type=float, default=600.0, help="time limit of the differential part")
    parser.add_argument("--show", type=int, default=20, help="findings to print in full")
    parser.add_argument("--worker", nargs=3, metavar=("PHASE", "ROUND", "START"), help=argparse.SUPPRESS)
    return parser


def _worker(args) -> int:
    """The child: one phase from (round, start) until the time is spent, one JSON event per line on stdout."""
    from ember.conformance.target import resolve

    from .campaign import address_space_capped, differential, event_line, run_rounds
    from .draws import Draws

    target = resolve(args.backend)
    if not target.available:
        print(json.dumps({"unavailable": target.reason}), flush=True)
        return 2
    phase, round_, start = args.worker[0], int(args.worker[1]), int(args.worker[2])
    until = time.monotonic() + args.seconds

    def emit(event: dict) -> None:
        print(event_line(event), flush=True)

    with address_space_capped(target.device):
        if phase == "fuzz":
            run_rounds(Draws(target.device, target.dtypes), args.seed, until, args.examples, args.deadline, start,
                       round_, emit)
        else:
            differential(target.device, args.seed, args.pytorch_calls, until, start, emit)
    return 0


def _supervise(args, phase: str, seconds: float, tally: Tally) -> int:
    """Run the phase in children until it ends or the time is spent, restarting after each crash from the
    target after the one that crashed; 2 where the backend is unavailable."""
    until = time.monotonic() + seconds
    round_, start = 0, 0
    while (left := until - time.monotonic()) > 1:
        command = [sys.executable, "-m", "ember.conformance.fuzzing", "--backend", args.backend, "--seconds",
                   f"{left:.1f}", "--seed", str(args.seed), "--examples", str(args.examples), "--deadline",
                   str(args.deadline), "--pytorch-calls", str(args.pytorch_calls), "--worker", phase, str(round_),
                   str(start)]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        current = None
        for line in child.stdout:
            event = json.loads(line)
            if "unavailable" in event:
                print(f"backend {args.backend!r} unavailable: {event['unavailable']}", file=sys.stderr)
                child.wait()
                return 2
            if "begin" in event:
                current = event
                continue
            current = None
            if phase == "fuzz":
                tally.add(event["calls"], [Report(t, d.split("\n", 1)[0], Finding(k, w), d)
                                           for t, k, w, d in event["reports"]])
            else:
                tally.differential.update(event["counts"])
        status = child.wait()
        if current is None:
            break
        why = f"the process died with status {status} in {current['target']} (round {current['round']})"
        tally.add(1, [Report(current["target"], current["target"], Finding("crash", why), why)])
        round_, start = current["round"], current["begin"] + 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.worker is not None:
        return _worker(args)
    tally = Tally()
    started = time.monotonic()
    if _supervise(args, "fuzz", args.seconds, tally) == 2:
        return 2
    tally.seconds = time.monotonic() - started
    if args.pytorch_calls and importlib.util.find_spec("torch") is None:
        print("PyTorch is not installed: no comparison with it", file=sys.stderr)
    elif args.pytorch_calls:
        _supervise(args, "pytorch", args.pytorch_seconds, tally)
    for report in tally.reports[:args.show]:
        print(f"[{report.finding.kind}] {report.target}: {report.finding.why}\n  {report.detail}\n")
    print(tally.line(args.backend, args.seed))
    return 1 if tally.findings else 0


if __name__ == "__main__":
    sys.exit(main())
