"""The report as text for a terminal and as Markdown for docs/compat.md."""
from __future__ import annotations

from .reasons import LABELS
from .report import NamespaceReport

HEADERS = ("namespace", "torch names", "Ember has", "coverage", "in scope", "coverage in scope",
           "signatures compared", "mismatched", "only `out=` missing", "signature unknown")


def _only_out(problems: list[str]) -> bool:
    return problems == ["missing `out`"]


def rows(reports: list[NamespaceReport], quote=lambda name: name) -> list[tuple[str, ...]]:
    def percent(part, whole):
        return f"{100.0 * part / whole:.1f}%" if whole else "-"

    def row(label, total, present, in_scope, compared, mismatches, unknown):
        only_out = sum(_only_out(p) for p in mismatches)
        return (label, str(total), str(present), percent(present, total), str(in_scope), percent(present, in_scope),
                str(compared), str(len(mismatches)), str(only_out), str(unknown))
    table = [row(quote(r.namespace) + ("" if r.ember_found else " (no Ember namespace)"), len(r.torch_names),
                 len(r.present), r.in_scope, r.compared, list(r.mismatches.values()), len(r.unknown))
             for r in reports]
    table.append(row("all", sum(len(r.torch_names) for r in reports), sum(len(r.present) for r in reports),
                     sum(r.in_scope for r in reports), sum(r.compared for r in reports),
                     [p for r in reports for p in r.mismatches.values()], sum(len(r.unknown) for r in reports)))
    return table


def text_table(reports: list[NamespaceReport]) -> str:
    table = [tuple(h.replace("`", "") for h in HEADERS)] + rows(reports)
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(line, widths))).rstrip() for line in table)


def markdown_table(reports: list[NamespaceReport]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "| --- " + "| ---: " * (len(HEADERS) - 1) + "|"]
    for line in rows(reports, quote=lambda name: f"`{name}`"):
        lines.append("| " + " | ".join(["**all**" if line[0] == "all" else line[0], *line[1:]]) + " |")
    return "\n".join(lines)


def grouped_missing(report: NamespaceReport) -> list[tuple[str, list[str]]]:
    """(reason, names) pairs: the real gaps ("other") first, then each out-of-scope family in table order."""
    def label(name: str) -> str:
        return f"{name} (stub)" if name in report.stubs else name
    order = [None, *LABELS]
    groups = [(reason or "other", [label(n) for n, why in report.missing.items() if why == reason])
              for reason in order]
    return [(reason, names) for reason, names in groups if names]


def text_missing(reports: list[NamespaceReport]) -> str:
    out = []
    for report in reports:
        out.append(f"\n{report.namespace}: {len(report.missing)} missing")
        for reason, names in grouped_missing(report):
            out.append(f"  {reason} ({len(names)}): {', '.join(names)}")
    return "\n".join(out)


def missing_lines(reports: list[NamespaceReport]) -> str:
    """One qualified name per line, for scripts and diffs."""
    return "\n".join(f"{r.namespace}.{name}" for r in reports for name in r.missing)


def markdown(reports: list[NamespaceReport], torch_version: str, ember_version: str) -> str:
    parts = [
        "# Ember and PyTorch: which names Ember has",
        "",
        f"Written by `python -m ember.compat --write` (PyTorch {torch_version}, Ember {ember_version}). "
        "For each PyTorch namespace: its public names, how many Ember has (a name whose body only raises "
        "`NotImplementedError` counts as missing, marked *stub*), and, for callables both have, whether the "
        "parameters agree (names, defaults, order; *signature unknown* where one side's cannot be read). "
        "What counts as a public name, and why, is in the docstring of `ember/compat/names.py` "
        "(`core/compat/names.py`); the reasons that group missing names are in `core/compat/reasons.py`. "
        "*In scope* counts the names that no such reason excludes; *other* lists the real gaps.",
        "",
        markdown_table(reports),
    ]
    for report in reports:
        parts += ["", f"## `{report.namespace}`", ""]
        if not report.ember_found:
            parts += ["Ember has no such namespace.", ""]
        parts.append(f"{len(report.present)} of {len(report.torch_names)} names, {report.coverage:.1f}%; "
                     f"{report.in_scope_coverage:.1f}% of the {report.in_scope} names in scope.")
        if report.missing:
            parts += ["", f"### Missing ({len(report.missing)})", ""]
            parts += [f"- {reason} ({len(names)}): " + ", ".join(f"`{n}`" for n in names)
                      for reason, names in grouped_missing(report)]
        if report.mismatches:
            parts += ["", f"### Signature mismatches ({len(report.mismatches)})", ""]
            parts += [f"- `{name}`: " + "; ".join(problems) for name, problems in report.mismatches.items()]
        if report.unknown:
            parts += ["", f"Signature unknown ({len(report.unknown)}): " + ", ".join(f"`{n}`" for n in report.unknown)]
    return "\n".join(parts) + "\n"
