"""A fuzz campaign: every target in turn, round after round, until the time is spent; and, where PyTorch is
installed, the differential fuzzer (``ember.compat.calls.fuzz``) on the same device. Its summary line is what
the hardening issues report."""
from __future__ import annotations

import contextlib
import json
import resource
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from .draws import Draws
from .targets import Report, all_targets, fuzz
from .verdicts import KINDS

#: Address space the fuzzed calls may add on a device whose memory is the host's: an allocation that validation
#: lets through fails as MemoryError (a finding) instead of taking the machine's memory.
MEMORY_HEADROOM = 4 << 30


_PLURAL = {"crash": "crashes", "hang": "hangs"}


@dataclass
class Tally:
    """What a campaign found: calls made, findings by kind (``verdicts.KINDS``), and the differential counts."""
    calls: int = 0
    findings: Counter = field(default_factory=Counter)
    reports: list = field(default_factory=list)
    differential: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, calls: int, reports: list[Report]) -> None:
        self.calls += calls
        for report in reports:
            self.findings[report.finding.kind] += 1
            self.reports.append(report)

    def line(self, backend: str, seed: int) -> str:
        kinds = ", ".join(f"{self.findings[k]} {_PLURAL.get(k, k)}" for k in KINDS)
        text = f"fuzz {backend}, seed {seed}, {self.seconds:.0f} s: {self.calls} calls; {kinds}"
        d = self.differential
        if d:
            mismatches = d["unexcused both accept"] + d["unexcused both reject"]
            text += (f"; against PyTorch ({d['ops']} ops): {d['calls']} calls, {mismatches} mismatches, "
                     f"{d['Ember accepts']} accepted where PyTorch rejects ({d['unexcused Ember accepts']} not "
                     f"excused), {d['PyTorch accepts']} refused where PyTorch accepts "
                     f"({d['unexcused PyTorch accepts']} not excused)")
        return text


@contextlib.contextmanager
def address_space_capped(device):
    """Bound what a runaway allocation can take while fuzzing, where device memory is host memory (not under
    CUDA, whose driver reserves far more address space than it uses); the limit is restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if device.type == "cuda":
        yield
        return
    with open("/proc/self/statm") as f:
        in_use = int(f.read().split()[0]) * resource.getpagesize()
    cap = in_use + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def target_seed(seed: int, round_: int, name: str) -> int:
    return zlib.crc32(f"{seed}:{round_}:{name}".encode())


def run_rounds(draws: Draws, seed: int, until: float, examples: int, deadline_s: float, start: int = 0,
               round_: int = 0, emit: Callable[[dict], None] = lambda event: None) -> None:
    """Fuzz target after target (``examples`` calls each), from target ``start`` of round ``round_``, until the
    clock passes ``until``; ``emit`` hears each target begin and end (a crash leaves a begin without an end)."""
    targets = all_targets()
    while time.monotonic() < until:
        for index in range(start, len(targets)):
            if time.monotonic() >= until:
                return
            target = targets[index]
            emit({"begin": index, "round": round_, "target": target.name})
            calls, reports = fuzz(target, draws, examples, target_seed(seed, round_, target.name), deadline_s)
            emit({"end": index, "round": round_, "calls": calls,
                  "reports": [[r.target, r.finding.kind, r.finding.why, r.detail] for r in reports]})
        start, round_ = 0, round_ + 1


def differential(device, seed: int, calls_per_overload: int, until: float, start: int = 0,
                 emit: Callable[[dict], None] = lambda event: None) -> None:
    """The differential fuzzer on ``device``, op after op from the ``start``-th of PyTorch's reachable ops, until
    the clock passes ``until``; ``emit`` hears each op begin and end with its counts (``fuzz.tally``)."""
    import torch

    import ember
    from ember.compat.calls.fuzz import op_outcomes, tally
    from ember.compat.calls.suite import ops, reachable

    compared = [op for op in ops() if reachable(torch, op)]
    for index in range(start, len(compared)):
        if time.monotonic() >= until:
            return
        op = compared[index]
        emit({"begin": index, "round": 0, "target": f"pytorch:{op.id}"})
        outcomes = op_outcomes(torch, ember, op, calls_per_overload, seed, str(device))
        counts = tally(outcomes, op.id)
        counts.update({"calls": len(outcomes), "ops": 1})
        emit({"end": index, "round": 0, "counts": dict(counts)})


def event_line(event: dict) -> str:
    return json.dumps(event, default=str)
