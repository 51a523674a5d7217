"""Where Ember's time goes in one case: cProfile of Ember's side, summarised for the optimisation work.

A ratio says how far off a target is; this says where to look. It reports own time (time spent in a
function's body, not in what it calls) by area of the code base and for the top functions, per call
of the case. cProfile slows Python-heavy code more than C-heavy code, so read shares, not absolute times.
(Named profiling, not profile: cProfile imports the standard library's ``profile``.)
"""
from __future__ import annotations

import cProfile
import pathlib
import pstats
from collections import defaultdict

from harness import Case, calls_for
from report import format_time
from sides import Side

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _area(filename: str) -> str:
    """The part of the code base a function belongs to: core/<package>, backends/<name>, a library, C built-ins.

    ufuncs such as np.matmul are not profiled as calls of their own; their time shows in the kernel calling them.
    """
    if filename.startswith("~") or filename.startswith("<"):
        return "C builtins (NumPy kernels, Python built-ins)"
    parts = pathlib.Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0] + " (Python)"
    try:
        rel = pathlib.Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return "Python standard library"
    top = rel.parts[0]
    if top in ("core", "backends") and len(rel.parts) > 2:
        return f"{top}/{rel.parts[1]}"
    return top if top != "core" else "core (tensor, methods, functions)"


def _where(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename.startswith("~"):
        return name
    parts = pathlib.Path(filename).parts
    if "site-packages" in parts:
        filename = "/".join(parts[parts.index("site-packages") + 1:])
    else:
        try:
            filename = str(pathlib.Path(filename).resolve().relative_to(ROOT))
        except ValueError:
            filename = pathlib.Path(filename).name
    return f"{name} ({filename}:{line})"


def profile(case: Case, side: Side, budget_s: float = 1.0, top: int = 12) -> str:
    """Markdown: own time by area and the ``top`` functions by own time, per call of ``case``."""
    fn = case.build([side])[0][0]
    calls = calls_for(fn, side.sync, budget_s)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    side.sync()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # func -> (primitive calls, calls, own time, cumulative, callers)
    total = sum(own for _, _, own, _, _ in stats.values()) or 1e-12
    areas: dict[str, float] = defaultdict(float)
    for func, (_, _, own, _, _) in stats.items():
        areas[_area(func[0])] += own
    lines = [f"### {case.name}", "",
             f"{calls} calls profiled, {format_time(total / calls)} per call under cProfile.", "",
             "Own time by area: " + ", ".join(f"{area} {t / total:.0%}" for area, t in
                                              sorted(areas.items(), key=lambda kv: -kv[1]) if t / total >= 0.01),
             "", "| function | own time per call | share | cumulative per call | calls per call |",
             "| --- | --- | --- | --- | --- |"]
    ranked = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    for func, (_, ncalls, own, cumulative, _) in ranked:
        lines.append(f"| `{_where(func)}` | {format_time(own / calls)} | {own / total:.0%} | "
                     f"{format_time(cumulative / calls)} | {ncalls / calls:.3g} |")
    return "\n".join(lines) + "\n"
