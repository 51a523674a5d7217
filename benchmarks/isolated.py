"""Each framework alone in fresh processes, taking turns: the benchmark's judged figures.

Two frameworks in one process disturb each other: PyTorch's OpenMP pool and NumPy's OpenBLAS pool
(Ember's) are both loaded, and on a small machine their threads compete for the cores, so the
in-process mode under-reports the gap a user sees (a transformer step read 1.21× there and 1.69×
with each framework alone). Here every turn is a fresh process that imports only its own framework
(checked in ``sys.modules`` after every case), builds the section's cases for its own sides with the
code the in-process mode uses (``harness.time_case``), and writes each round's time as JSON.
Processes alternate (Ember, PyTorch, Ember, PyTorch, ...), so changes of machine load hit both
alike. Per case and side the report gives the median over processes of each process's median, and
the largest distance of a process's median from it.

    python benchmarks/isolated.py --framework ember --section overhead --lineup JSON --cases add --out FILE
        [--shared DIR] [--quick]                      (one child process; run.py starts them)
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
from typing import Callable

from harness import Case, Result, Section, Table, failed, shared, time_case
from sections import SECTIONS
from sides import Lineup

NAMES = {"ember": "Ember", "torch": "PyTorch", "numpy": "NumPy"}
#: processes per framework when --processes is not given: quick looks and the full (judged) run
PROCESSES = {True: 2, False: 3}
_ALONE = ("ember", "torch")  # frameworks a process must not load unless they are its own
_SCRIPT = pathlib.Path(__file__).resolve()

Turn = dict  # one child's JSON: {"framework", "loaded", "cases": {key: {"times", "note"} | {"failed"}}}


class IsolationError(RuntimeError):
    """A benchmark process loaded another framework besides its own, so its timings are not of one framework alone."""


def loaded_frameworks() -> list[str]:
    return [name for name in _ALONE if name in sys.modules]


def check_alone(framework: str, when: str) -> None:
    others = [name for name in loaded_frameworks() if name != framework]
    if others:
        raise IsolationError(f"the {NAMES[framework]} process imported {', '.join(others)} {when}")


def child(framework: str, section_key: str, line: Lineup, quick: bool, case_keys: list[str]) -> Turn:
    """Time the chosen cases of a section on ``framework``'s sides only, in this process."""
    section = SECTIONS[section_key](line, quick)
    sides = [side for side in section.sides if side.framework == framework]
    check_alone(framework, "while building the section")
    cases = {}
    for case in (c for c in section.cases if c.key in case_keys):
        try:
            times, note = time_case(case, sides, section.timing)
            cases[case.key] = {"times": times, "note": note}
        except Exception as exc:  # one broken op must not cost the whole report
            cases[case.key] = {"failed": f"{type(exc).__name__}: {exc}"}
        check_alone(framework, f"during case {case.key!r}")
    return {"framework": framework, "loaded": loaded_frameworks(), "cases": cases}


def _spawn(framework: str, section: Section, line: Lineup, quick: bool, directory: pathlib.Path) -> Turn:
    out = directory / "turn.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, str(_SCRIPT), "--framework", framework, "--section", section.key,
               "--lineup", line.to_json(), "--cases", ",".join(c.key for c in section.cases),
               "--shared", str(directory), "--out", str(out)] + (["--quick"] if quick else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{NAMES[framework]} process exited with {done.returncode}: {last}")
    return json.loads(out.read_text())


def run(section: Section, line: Lineup, quick: bool, processes: int,
        progress: Callable[[str], None] = lambda line: None) -> Table:
    """The section's table, each framework timed alone in ``processes`` fresh processes, taking turns."""
    frameworks = list(dict.fromkeys(side.framework for side in section.sides))
    turns: dict[str, list[Turn]] = {framework: [] for framework in frameworks}
    with tempfile.TemporaryDirectory(prefix="ember-bench-") as directory:
        try:
            for i in range(processes):
                for framework in frameworks:
                    progress(f"{section.title}: {NAMES[framework]} process {i + 1}/{processes}")
                    turns[framework].append(_spawn(framework, section, line, quick, pathlib.Path(directory)))
        except RuntimeError as exc:  # a broken process must not cost the rest of the report
            progress(f"  failed: {exc}")
            return section.table([failed(case, section.subject, section.reference, str(exc))
                                  for case in section.cases])
    results = [_combine(case, section, turns) for case in section.cases]
    return section.table(results, note=_method(section, turns, processes), show_spread=processes > 1)


def _combine(case: Case, section: Section, turns: dict[str, list[Turn]]) -> Result:
    """One case's result: per side, the median over processes of each process's median round."""
    per_process: dict[str, list[list[float]]] = {}
    notes: list[str] = []
    for framework, runs in turns.items():
        for turn in runs:
            outcome = turn["cases"][case.key]
            if "failed" in outcome:
                return failed(case, section.subject, section.reference, f"{NAMES[framework]}: {outcome['failed']}")
            for label, times in outcome["times"].items():
                per_process.setdefault(label, []).append(times)
            if outcome["note"] and outcome["note"] not in notes:
                notes.append(outcome["note"])
    values, spread, best = {}, {}, {}
    for label, runs in per_process.items():
        medians = [statistics.median(times) for times in runs]
        values[label] = statistics.median(medians)
        spread[label] = max(abs(m - values[label]) for m in medians) / values[label] if values[label] else 0.0
        best[label] = min(min(times) for times in runs)
    return Result(case.key, case.name, values, section.subject, section.reference, case.target, case.work,
                  "; ".join(notes), spread, best)


def processes_text(count: int) -> str:
    return f"{count} fresh process{'es' if count > 1 else ''}"


def _method(section: Section, turns: dict[str, list[Turn]], processes: int) -> str:
    order = ", ".join(NAMES[framework] for framework in turns)
    loaded = "; ".join(f"{NAMES[framework]} processes: "
                       f"{', '.join(sorted({name for turn in runs for name in turn['loaded']})) or 'neither'}"
                       for framework, runs in turns.items())
    spread = (" ± is the largest distance of one process's median from that value." if processes > 1 else "")
    return (f"Separate processes: {processes_text(processes)} per framework, taking turns ({order}, ...); "
            f"each value is the median over processes of each process's median over {section.timing.rounds} "
            f"rounds.{spread} Each process imported only its own framework (checked in sys.modules; "
            f"frameworks loaded: {loaded}).")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one process of the separate-process benchmark (run.py starts them)")
    parser.add_argument("--framework", choices=sorted(NAMES), required=True)
    parser.add_argument("--section", choices=sorted(SECTIONS), required=True)
    parser.add_argument("--lineup", type=Lineup.from_json, required=True, help="the device's sides, as JSON")
    parser.add_argument("--cases", type=lambda s: s.split(","), required=True, help="comma-separated case keys")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="where to write the timings (JSON)")
    parser.add_argument("--shared", type=pathlib.Path, help="directory for arrays all processes share (weights)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    shared.directory = args.shared
    turn = child(args.framework, args.section, args.lineup, args.quick, args.cases)
    args.out.write_text(json.dumps(turn))


if __name__ == "__main__":
    main()
