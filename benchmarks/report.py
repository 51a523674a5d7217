"""The Markdown report: machine and method first, then the targets (issue 8 on the CPU, issue 6 on CUDA),
then every section's table.

Every ratio reads the same way, whatever the unit: Ember's cost over the other side's cost (time
per call, or bytes), so lower is better and 1.0× is parity. Rate columns (GFLOP/s, batches/s) show
the rate but keep that ratio, so a target check never has to know which way a column points.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness import Result, Table
from sides import EMBER_ONE_THREAD, TORCH_ONE_THREAD

NOISY = 0.10  # rounds whose interquartile range exceeds this share of the median are flagged


@dataclass
class DevicePart:
    """One device's tables, or the reason it was skipped."""
    device: str
    tables: list[Table] = field(default_factory=list)
    skipped: str = ""
    notes: list[str] = field(default_factory=list)


def format_time(seconds: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.0f} ns"


def format_value(table: Table, result: Result, label: str) -> str:
    value = result.values.get(label)
    if value is None:
        return "n/a"
    if table.unit == "time":
        text = format_time(value)
    elif table.unit == "bytes":
        text = f"{value / 2 ** 20:.1f} MiB"
    else:
        text = f"{result.work / value / table.scale:.1f} {table.unit}"
    spread = result.spread.get(label, 0.0)
    return f"{text} (±{spread:.0%})" if spread > NOISY or (table.show_spread and label in result.spread) else text


def format_ratio(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}×"


def status(result: Result) -> str:
    if result.note.startswith("failed"):
        return "**not measured** (failed)"
    if result.met is None:
        return "n/a (no reference)"
    return "met" if result.met else "**missed**"


def format_bound(target: float) -> str:
    """A target ratio with as many decimals as it has (1.0, 1.3, 1.11 for GEMM's 90 %), at least one."""
    text = f"{target:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def format_target(result: Result) -> str:
    return "" if result.target is None else f"≤ {format_bound(result.target)}×: {status(result)}"


def render_table(table: Table) -> list[str]:
    has_target = any(r.target is not None for r in table.results)
    header = ["case", *table.labels, *(f"{a}/{b}" for a, b in table.pairs)]
    if has_target:
        header.append("target")
    lines = [f"### {table.title}", ""]
    if table.note:
        lines += [table.note, ""]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in table.results:
        name = f"{r.name} ({r.note})" if r.note else r.name
        row = [name, *(format_value(table, r, label) for label in table.labels),
               *(format_ratio(r.ratio(b, of=a)) for a, b in table.pairs)]
        if has_target:
            row.append(format_target(r))
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


#: device -> the title of its targets table: issue 8 set the CPU targets, issue 6 the CUDA ones
TARGET_TITLES = {"cpu": "Issue-8 targets (cpu)", "cuda": "Issue-6 targets (cuda, against PyTorch CUDA eager)"}


def targets(parts: list[DevicePart], device: str = "cpu") -> list[Result]:
    """Results of ``device``'s part that carry a target."""
    return [r for part in parts if part.device == device for t in part.tables for r in t.results
            if r.target is not None]


def render_targets(results: list[Result], title: str = TARGET_TITLES["cpu"]) -> list[str]:
    if not results:
        return []
    lines = [f"## {title}", "",
             "Judged on the ratio of medians with each framework's default threads. Two cross-checks against "
             "other processes' load: the ratio of the fastest rounds, and (training steps) the ratio with both "
             "frameworks limited to one thread.",
             "", "| case | Ember/PyTorch (medians) | fastest rounds | 1 thread each | target | status |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        best = format_ratio(r.ratio(best=True)) if r.best else "—"
        single = format_ratio(r.ratio(TORCH_ONE_THREAD, of=EMBER_ONE_THREAD)) if EMBER_ONE_THREAD in r.values else "—"
        lines.append(f"| {r.name} | {format_ratio(r.ratio())} | {best} | {single} | ≤ {format_bound(r.target)}× | {status(r)} |")
    met = sum(1 for r in results if r.met)
    judged = sum(1 for r in results if r.met is not None)
    failed = sum(1 for r in results if r.note.startswith("failed"))
    summary = [f"{met} of {judged} targets met."]
    if failed:
        summary.append(f"{failed} not measured: the case failed (see its row).")
    if judged + failed < len(results):
        summary.append(f"{len(results) - judged - failed} not judged: no PyTorch reference.")
    return lines + ["", " ".join(summary), ""]


def render(header: list[str], parts: list[DevicePart], profiles: list[str]) -> str:
    lines = ["# Ember benchmarks", ""] + header + [""]
    for device, title in TARGET_TITLES.items():
        lines += render_targets(targets(parts, device), title)
    for part in parts:
        lines += [f"## {part.device}", ""]
        if part.skipped:
            lines += [f"Skipped: {part.skipped}", ""]
            continue
        lines += [f"{note}\n" for note in part.notes]
        for table in part.tables:
            lines += render_table(table)
    if profiles:
        lines += ["## Where Ember's time goes (cProfile, missed targets)", ""] + profiles
    return "\n".join(lines).rstrip() + "\n"
