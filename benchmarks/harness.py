"""Interleaved timing of contenders in one process: medians per contender and their ratios.

Rounds alternate (Ember, PyTorch, Ember, PyTorch, ...) so that drifts in machine load hit every
contender alike: the machine is shared, and timing one side after the other would fold a change
of load into the ratio. Each round times a batch of calls sized to a time budget and reports
seconds per call; the median over rounds discards the rounds a neighbour's burst spoiled.

Both of the benchmark's modes build and time a case with this code (``time_case``): in one process
every contender takes part (``Section.run``); in the separate-process mode (isolated.py) each
process times only its own framework's contenders.
"""
from __future__ import annotations

import dataclasses
import pathlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

Call = Callable[[], object]


@dataclass
class Timing:
    """How long to measure: ``rounds`` interleaved rounds of about ``budget_s`` seconds per contender.

    ``settle_s`` is an untimed pause before each contender's turn. Thread pools keep spinning
    after their last job (OpenBLAS for about 0.1 s), so without it the previous contender's idle
    pool competes for the cores with the next one's: on two cores that slowed PyTorch's default
    (2-thread) training step about twofold right after an Ember turn.
    """
    rounds: int
    budget_s: float
    settle_s: float = 0.0


@dataclass
class Case:
    """One benchmark, written once and built for every contender.

    ``build(sides)`` returns one zero-argument call per side (same inputs, same work), or None for a
    side the case cannot run on (it is reported as n/a), and a note (empty unless something about
    the comparison needs saying, such as outputs that disagree or why a side did not run).
    ``work`` is the amount of work in one call (FLOPs, batches) for cases reported as a rate;
    ``target`` is the issue-8 bound on the ratio Ember / reference, where one exists;
    ``settle_s``, where given, replaces the section's pause between turns (see ``Timing``);
    ``rounds``, where given, the section's number of rounds (for cases whose one call takes seconds).
    """
    key: str
    name: str
    build: Callable[[Sequence], tuple[list[Call], str]]
    target: float | None = None
    work: float | None = None
    settle_s: float | None = None
    rounds: int | None = None


@dataclass
class Result:
    """Medians of one case: ``values[label]`` is seconds per call (or bytes, for memory)."""
    key: str
    name: str
    values: dict[str, float | None]
    subject: str
    reference: str | None
    target: float | None = None
    work: float | None = None
    note: str = ""
    spread: dict[str, float] = field(default_factory=dict)
    best: dict[str, float] = field(default_factory=dict)

    def ratio(self, label: str | None = None, best: bool = False, of: str | None = None) -> float | None:
        """``of`` (default: Ember) / ``label`` (default: the reference); lower is better for time and memory alike.

        ``best`` compares the fastest rounds instead of the medians: on a shared machine that is
        the estimate least disturbed by other people's bursts, a cross-check on the median.
        """
        label = label or self.reference
        values = self.best if best else self.values
        mine, theirs = values.get(of or self.subject), values.get(label) if label else None
        if mine is None or not theirs:
            return None
        return mine / theirs

    @property
    def met(self) -> bool | None:
        """Whether the target holds; None when there is no target or nothing to compare with."""
        ratio = self.ratio()
        if self.target is None or ratio is None:
            return None
        return ratio <= self.target


def _timed(fn: Call, calls: int, sync: Call) -> float:
    """Seconds for ``calls`` calls, including waiting for queued device work once at the end."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return time.perf_counter() - start


def calls_for(fn: Call, sync: Call, budget_s: float) -> int:
    """How many calls fill about ``budget_s`` seconds, after one warm-up call.

    The warm-up pays for lazy work (kernel caches, optimizer state created on the first step)
    that steady-state training never pays again. Batches grow tenfold until one is long enough
    to time reliably, so microsecond ops and second-long training steps are both sized right.
    """
    fn()
    sync()
    calls, elapsed = 1, _timed(fn, 1, sync)
    while elapsed < budget_s / 10 and calls < 1_000_000:
        calls *= 10
        elapsed = _timed(fn, calls, sync)
    return max(1, round(budget_s * calls / max(elapsed, 1e-9)))


def interleave(sides: Sequence, calls: Sequence[Call], timing: Timing) -> dict[str, list[float]]:
    """Seconds per call of each side in each round, the sides taking turns within every round.

    A side's ``running()`` context (its thread count) is entered around each of its rounds; when
    that switches PyTorch's thread count, one untimed call goes first, so the switch is not timed.
    Sides whose call is None are left out.
    """
    present = [(side, fn) for side, fn in zip(sides, calls) if fn is not None]
    sides, calls = [side for side, _ in present], [fn for _, fn in present]
    sizes = []
    for side, fn in zip(sides, calls):
        time.sleep(timing.settle_s)
        with side.running():
            sizes.append(calls_for(fn, side.sync, timing.budget_s))
    times: dict[str, list[float]] = {side.label: [] for side in sides}
    for _ in range(timing.rounds):
        for side, fn, n in zip(sides, calls, sizes):
            with side.running() as switched:
                if switched:
                    fn()
                time.sleep(timing.settle_s)
                times[side.label].append(_timed(fn, n, side.sync) / n)
    return times


def time_case(case: Case, sides: Sequence, timing: Timing) -> tuple[dict[str, list[float]], str]:
    """Build ``case`` for ``sides`` and time them interleaved: seconds per call of each round, and the build's note."""
    calls, note = case.build(sides)
    if case.settle_s is not None:
        timing = dataclasses.replace(timing, settle_s=case.settle_s)
    if case.rounds is not None:
        timing = dataclasses.replace(timing, rounds=min(timing.rounds, case.rounds))
    return interleave(sides, calls, timing), note


def measure(case: Case, sides: Sequence, timing: Timing, reference: str | None) -> Result:
    """Time ``case`` on every side in this process and summarise each side by its median over rounds."""
    times, note = time_case(case, sides, timing)
    medians = {label: statistics.median(ts) for label, ts in times.items()}
    spread = {label: _relative_iqr(ts) for label, ts in times.items()}
    best = {label: min(ts) for label, ts in times.items()}
    return Result(case.key, case.name, medians, sides[0].label, reference, case.target, case.work, note, spread,
                  best)


def failed(case: Case, subject: str, reference: str | None, error: str) -> Result:
    """The result of a case that could not be measured: no values, and the error as its note."""
    return Result(case.key, case.name, {}, subject, reference, case.target, case.work, note=f"failed: {error}")


class SharedArrays:
    """NumPy arrays every side of a case must start from alike: initial weights, a reference output.

    In one process they are made by the first side to ask and kept for the others. Across processes
    (the separate-process mode) they are kept as .npz files in a directory the parent chose: the
    first process to ask makes and stores them, later ones load the same arrays.
    """

    def __init__(self) -> None:
        self.directory: pathlib.Path | None = None
        self._made: dict[str, dict[str, np.ndarray]] = {}

    def get(self, name: str, make: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        if self.directory is None:
            if name not in self._made:
                self._made[name] = make()
            return self._made[name]
        path = self.directory / f"{name}.npz"
        if path.exists():
            with np.load(path) as stored:
                return {key: stored[key] for key in stored.files}
        arrays = make()
        np.savez(path, **arrays)
        return arrays


shared = SharedArrays()


def _relative_iqr(times: list[float]) -> float:
    """Interquartile range over the median: how much the rounds disagreed (0.05 = 5 %)."""
    if len(times) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(times, n=4)
    return (q3 - q1) / statistics.median(times)


@dataclass
class Table:
    """Results of one section as the report shows them.

    ``unit`` says how values read: 'time' (seconds per call), 'bytes', or a rate such as
    'GFLOP/s' computed as ``work / seconds / scale``.
    """
    key: str
    title: str
    labels: list[str]
    results: list[Result]
    unit: str = "time"
    scale: float = 1.0
    note: str = ""
    pairs: list[tuple[str, str]] | None = None
    show_spread: bool = False  # show every value's spread, not only the noisy ones

    def __post_init__(self) -> None:
        if self.pairs is None:  # default: Ember against each other side
            self.pairs = [(self.labels[0], other) for other in self.labels[1:]]


@dataclass
class Section:
    """A group of cases timed against the same sides (Ember first, the reference second).

    ``pairs`` lists the ratios to report as (numerator, denominator) labels; by default Ember
    against each other side.
    """
    key: str
    title: str
    sides: list
    cases: list[Case]
    timing: Timing
    unit: str = "time"
    scale: float = 1.0
    note: str = ""
    pairs: list[tuple[str, str]] | None = None

    @property
    def subject(self) -> str:
        return self.sides[0].label

    @property
    def reference(self) -> str | None:
        return self.sides[1].label if len(self.sides) > 1 else None

    def run(self, progress: Callable[[str], None] = lambda line: None) -> Table:
        """Every case timed in this process, all sides interleaved."""
        results = []
        for case in self.cases:
            progress(f"{self.title}: {case.name}")
            try:
                results.append(measure(case, self.sides, self.timing, self.reference))
            except Exception as exc:  # one broken op must not cost the whole report
                progress(f"  failed: {type(exc).__name__}: {exc}")
                results.append(failed(case, self.subject, self.reference, f"{type(exc).__name__}: {exc}"))
        return self.table(results)

    def table(self, results: list[Result], note: str = "", show_spread: bool = False) -> Table:
        """The section's table of ``results``; ``note`` is added to the section's own."""
        labels = [s.label for s in self.sides]
        return Table(self.key, self.title, labels, results, self.unit, self.scale,
                     " ".join(n for n in (self.note, note) if n), self.pairs, show_spread)
