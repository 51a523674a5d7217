"""A conformance run written out: the op × dtype matrix for the terminal, and the same as a Markdown report."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .matrix import FAIL, NOT_RUN, PASS, SKIP, STATUSES, UNSUPPORTED, Matrix
from .record import Result

SHORT_DTYPE = {"bool": "bool", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
               "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex64": "c64",
               "complex128": "c128"}
TEXT_CELL = {PASS: "ok", FAIL: "FAIL", UNSUPPORTED: "-", SKIP: "skip", NOT_RUN: "."}
MARKDOWN_CELL = {PASS: "✅", FAIL: "❌", UNSUPPORTED: "—", SKIP: "⏭", NOT_RUN: "·"}


@dataclass
class Run:
    """Everything a report says about one run of the suite."""

    backend: str
    device: str
    dtypes: list[str]
    profile: str
    seconds: float
    matrix: Matrix
    results: list[Result]
    collection_errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def outcomes(self) -> Counter:
        return Counter(r.outcome for r in self.results)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.outcome == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.collection_errors and bool(self.results)

    def summary(self) -> str:
        o = self.outcomes
        return (f"{o['passed']} passed, {o['failed']} failed, {o['skipped']} skipped"
                + (f", {len(self.collection_errors)} collection errors" if self.collection_errors else ""))

    def kernel_split(self) -> str:
        kinds = Counter(self.matrix.implementation.values())
        primitives = kinds["kernel"] + kinds["MISSING"]
        return (f"{kinds['kernel']} of {primitives} primitives implemented"
                + (f" ({kinds['MISSING']} missing)" if kinds["MISSING"] else "")
                + f"; {kinds['override']} composites overridden; {kinds['core']} composites run from core")

    def skip_reasons(self) -> Counter:
        return Counter(r.message for r in self.results if r.outcome == "skipped")


def _legend(cells: dict) -> str:
    return ", ".join(f"{cells[s]} {s}" for s in STATUSES)


def text(run: Run, *, only_problems: bool = False) -> str:
    """The matrix as a fixed-width table (rows with a failure or skip only, if ``only_problems``)."""
    m = run.matrix
    width = max(len(op) for op in m.rows) + 1
    header = "op".ljust(width) + "impl      " + " ".join(SHORT_DTYPE[d].rjust(4) for d in m.dtypes)
    lines = [header, "-" * len(header)]
    for op, row in m.rows.items():
        if only_problems and not ({FAIL, SKIP} & set(row.values())):
            continue
        cells = " ".join(TEXT_CELL[row[d]].rjust(4) for d in m.dtypes)
        lines.append(f"{op.ljust(width)}{m.implementation[op]:<10}{cells}")
    tally = m.tally()
    lines += ["", f"legend: {_legend(TEXT_CELL)}",
              "cells: " + ", ".join(f"{tally[s]} {s}" for s in STATUSES if tally[s])]
    for module, counts in sorted(m.other.items()):
        lines.append(f"{module}: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    lines += _problems(run, markdown=False)
    lines.append(f"{run.backend}: {run.summary()} in {run.seconds:.1f} s; {run.kernel_split()}")
    return "\n".join(lines)


def _problems(run: Run, *, markdown: bool) -> list[str]:
    """Collection errors and failures, one line each (the first line of the error)."""
    code = (lambda s: f"`{s}`") if markdown else (lambda s: s)
    sections = [("Collection errors", run.collection_errors),
                ("Failures", [f"{code(r.nodeid)}: {r.message}" for r in run.failures])]
    lines = []
    for title, items in sections:
        if items:
            lines += ["", f"## {title}", ""] if markdown else ["", f"{title.upper()}:"]
            lines += [f"{'- ' if markdown else '  '}{item}" for item in items]
    return lines


def markdown(run: Run) -> str:
    """The whole report, as Markdown."""
    m = run.matrix
    lines = [f"# Ember conformance report: `{run.backend}`", "",
             f"- device: `{run.device}`; dtypes it supports: {', '.join(run.dtypes)}",
             f"- hypothesis profile: `{run.profile}`",
             f"- result: **{'PASS' if run.ok else 'FAIL'}**: {run.summary()} in {run.seconds:.1f} s",
             f"- kernels: {run.kernel_split()}", "",
             "## Op × dtype", "",
             f"Legend: {_legend(MARKDOWN_CELL)}. *impl* says how the backend runs the op: `kernel` (its own, "
             f"for a primitive), `override` (its own, for a composite), `core` (the composite's definition in "
             f"Ember ops), `MISSING` (a primitive without a kernel).", "",
             "| op | impl | " + " | ".join(m.dtypes) + " |",
             "| --- | --- | " + " | ".join(":-:" for _ in m.dtypes) + " |"]
    for op, row in m.rows.items():
        lines.append(f"| `{op}` | {m.implementation[op]} | " + " | ".join(MARKDOWN_CELL[row[d]] for d in m.dtypes)
                     + " |")
    tally = m.tally()
    lines += ["", "Cells: " + ", ".join(f"{tally[s]} {s}" for s in STATUSES if tally[s]) + ".", "",
              "## Other checks", "", "| test module | passed | failed | skipped |", "| --- | --: | --: | --: |"]
    lines += [f"| `{module}` | {c['passed']} | {c['failed']} | {c['skipped']} |" for module, c in sorted(m.other.items())]
    if run.counts:
        lines += ["", "## Checks inside the tests", ""] + [f"- {what}: {n}" for what, n in run.counts.items()]
    lines += _problems(run, markdown=True)
    reasons = run.skip_reasons()
    if reasons:
        lines += ["", "## Skips", ""] + [f"- {n} × {reason}" for reason, n in reasons.most_common()]
    return "\n".join(lines) + "\n"
