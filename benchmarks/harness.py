"""Interleaved timing of Ember against PyTorch in one process: medians and their ratio.

Rounds alternate (Ember, PyTorch, Ember, PyTorch, ...) so that drifts in machine load hit both
sides alike. Each round times a batch of calls and reports seconds per call.
"""
from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass
class Result:
    name: str
    ember_s: float
    torch_s: float | None

    @property
    def ratio(self) -> float | None:
        return None if self.torch_s is None else self.ember_s / self.torch_s


def _per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _calls_for(fn: Callable[[], object], budget_s: float) -> int:
    """How many calls fill about ``budget_s`` seconds, after a warm-up."""
    for _ in range(3):
        fn()
    one = max(_per_call(fn, 3), 1e-7)
    return max(1, int(budget_s / one))


def compare(name: str, ember_fn: Callable[[], object], torch_fn: Callable[[], object] | None,
            rounds: int = 15, round_budget_s: float = 0.02) -> Result:
    ember_calls = _calls_for(ember_fn, round_budget_s)
    torch_calls = _calls_for(torch_fn, round_budget_s) if torch_fn else 0
    ember_times, torch_times = [], []
    for _ in range(rounds):
        ember_times.append(_per_call(ember_fn, ember_calls))
        if torch_fn:
            torch_times.append(_per_call(torch_fn, torch_calls))
    return Result(name, statistics.median(ember_times), statistics.median(torch_times) if torch_fn else None)


def machine() -> str:
    import os
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def format_time(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.0f} ns"


def markdown(results: list[Result], title: str, versions: str) -> str:
    lines = [f"# {title}", "", f"Machine: {machine()}. {versions}", "",
             "Medians of interleaved rounds; ratio = Ember / PyTorch (lower is better).", "",
             "| benchmark | Ember | PyTorch | ratio |", "| --- | --- | --- | --- |"]
    for r in results:
        ratio = "n/a" if r.ratio is None else f"{r.ratio:.2f}×"
        lines.append(f"| {r.name} | {format_time(r.ember_s)} | {format_time(r.torch_s)} | {ratio} |")
    return "\n".join(lines) + "\n"
