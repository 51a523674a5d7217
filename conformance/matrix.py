"""The op × dtype matrix of a conformance run: one status per cell, read off the recorded results.

A cell is ``fail`` when any test of that op and dtype failed; ``unsupported`` when the op does
not accept the dtype or the backend lacks it (the suite then checks that it is refused cleanly);
``pass`` when at least one of its tests passed and none failed; ``skip`` when every test that ran
skipped; ``not run`` when none ran (a ``-k`` filter, say).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ember.dispatch import ALL_DTYPES, builtin_ops

from .cases import accepts
from .record import Result

PASS, FAIL, UNSUPPORTED, SKIP, NOT_RUN = "pass", "fail", "unsupported", "skip", "not run"
STATUSES = (PASS, FAIL, UNSUPPORTED, SKIP, NOT_RUN)


@dataclass
class Matrix:
    dtypes: list[str]  # every Ember dtype, in promotion order
    rows: dict[str, dict[str, str]]  # op -> dtype -> status
    implementation: dict[str, str]  # op -> "kernel", "override", "core" or "MISSING"
    cell_results: dict[tuple[str, str], list[Result]] = field(default_factory=dict)
    other: dict[str, Counter] = field(default_factory=dict)  # test module -> outcome counts, for the rest

    def tally(self) -> Counter:
        """How many cells have each status."""
        return Counter(status for row in self.rows.values() for status in row.values())


def implementation_of(op, kernels) -> str:
    """How the backend runs ``op``: its own kernel, its override of a composite, the core composite, or not at all."""
    if op.kind == "primitive":
        return "kernel" if op.name in kernels else "MISSING"
    return "override" if op.name in kernels else "core"


def _cell(results: list[Result], accepted: bool) -> str:
    outcomes = {r.outcome for r in results}
    if "failed" in outcomes:
        return FAIL
    if not accepted:
        return UNSUPPORTED
    if "passed" in outcomes:
        return PASS
    return SKIP if outcomes else NOT_RUN


def build(results: list[Result], target) -> Matrix:
    """The matrix of a run against ``target`` (a ``target.Target``; available)."""
    by_cell: dict[tuple[str, str], list[Result]] = defaultdict(list)
    other: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        if r.op is not None and r.dtype is not None:
            by_cell[(r.op, r.dtype)].append(r)
        else:
            other[r.module][r.outcome] += 1
    dtypes = [d.name for d in ALL_DTYPES]
    rows = {op.name: {d.name: _cell(by_cell.get((op.name, d.name), []), accepts(op, d, target.dtypes))
                      for d in ALL_DTYPES}
            for op in builtin_ops()}
    implementation = {op.name: implementation_of(op, target.impl.kernels) for op in builtin_ops()}
    return Matrix(dtypes, rows, implementation, dict(by_cell), dict(other))
