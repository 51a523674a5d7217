"""Ember against PyTorch on the issue-8 workloads, each framework alone in fresh processes, taking turns.

    python benchmarks/run.py [--quick] [--device cpu] [--only SECTIONS] [--cases KEYS]
                             [--processes N | --in-process] [--write benchmarks/results/cpu.md]

Sections: per-op overhead, GEMM (on CUDA also TF32, float16 and bfloat16), one training step of an MLP, a
CNN, a transformer encoder and a small GPT (eager, Ember compiled, and on a GPU Ember compiled with
mode="reduce-overhead"), the work of well-known public programs (programs.py: recurrent language models,
LSTMCell + LBFGS, makemore, GPT sampling, small GPTs; CPU), DataLoader throughput, peak RSS of training
loops (on CUDA: peak device memory of each training step), startup (import and first steps, fresh
processes), and the first call of ember.compile (fresh subprocesses). By default (``--isolated``,
the judged figures) every timed section runs in fresh processes that each import one framework only,
alternating Ember, PyTorch, Ember, PyTorch, ... (``--processes N`` per framework), and reports per
case the median over processes, their spread and the ratio. ``--in-process`` times all sides in this
one process with interleaved rounds: quicker, for looks, but it under-reports, since the frameworks'
thread pools disturb each other. ``--device cuda|opencl``
(repeatable) adds or selects another device: Ember there against PyTorch CUDA (judged by the issue-6
targets, GEMM up to 4096 in TFLOP/s), or against Ember's own CPU backend for OpenCL; a device that is
not available is reported as skipped, with the reason.
Without PyTorch (the ``bench`` extra) the Ember-only parts still run. ``--profile KEY`` prints
where Ember's time goes in one case; ``--profile-missed`` appends that for every missed target.
"""
from __future__ import annotations

import argparse
import datetime
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import compilation  # noqa: E402
import compile_time  # noqa: E402
import device_memory  # noqa: E402
import gpu  # noqa: E402
import isolated  # noqa: E402
import machine  # noqa: E402
import memory  # noqa: E402
import startup  # noqa: E402
from harness import Case  # noqa: E402
from report import DevicePart, render, targets  # noqa: E402
from sections import SECTIONS  # noqa: E402
from sides import Lineup, lineup, load_torch  # noqa: E402

ORDER = ["overhead", "gemm", "training", "programs", "loading", "sparse", "func", "export", "memory", "startup",
         "compile"]
DEVICES = ["cpu", "cuda", "opencl"]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, steps and processes: a quick look")
    parser.add_argument("--device", action="append", choices=DEVICES,
                        help="device to benchmark (repeatable; default cpu)")
    parser.add_argument("--write", type=pathlib.Path, metavar="FILE",
                        help="also write the Markdown report to this file")
    parser.add_argument("--only", type=lambda s: s.split(","), default=ORDER, metavar="SECTIONS",
                        help=f"comma-separated sections to run, of {','.join(ORDER)}")
    parser.add_argument("--cases", type=lambda s: s.split(","), metavar="KEYS",
                        help="comma-separated case keys (e.g. add,mlp): only these cases of the timed sections, "
                             "and no memory or compile table")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--isolated", dest="in_process", action="store_false",
                      help="each framework alone in fresh processes, taking turns (the default: the judged figures)")
    mode.add_argument("--in-process", dest="in_process", action="store_true",
                      help="all sides in this process, rounds interleaved: quicker, for looks; under-reports")
    parser.set_defaults(in_process=False)
    parser.add_argument("--processes", type=int, metavar="N",
                        help=f"fresh processes per framework in the isolated mode (default {isolated.PROCESSES[False]}, "
                             f"{isolated.PROCESSES[True]} with --quick)")
    parser.add_argument("--no-torch", action="store_true",
                        help="measure Ember only, as when PyTorch is not installed")
    parser.add_argument("--profile", metavar="KEY", help="cProfile Ember's side of one case (e.g. mlp, add) and exit")
    parser.add_argument("--profile-missed", action="store_true",
                        help="append a cProfile summary of Ember's side for each missed time target")
    args = parser.parse_args(argv)
    args.device = args.device or ["cpu"]
    if args.processes is None:
        args.processes = isolated.PROCESSES[args.quick]
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    unknown = set(args.only) - set(ORDER)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(ORDER)}")
    return args


def _progress(start: float):
    def say(line: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {line}", file=sys.stderr, flush=True)
    return say


def run_device(line: Lineup, args, with_torch: bool, say) -> tuple[DevicePart, dict[str, Case]]:
    """Every chosen section on one device; also the cases by key, for profiling afterwards."""
    part, cases = DevicePart(line.device), {}
    if line.subject is None:
        part.skipped = line.skipped
        say(f"{line.device}: skipped. {line.skipped}")
        return part, cases
    if line.note:
        part.notes.append(line.note)
    if line.device != "cpu":
        part.notes.append("DataLoader throughput and peak RSS are host-side: see the cpu part"
                          + (" (peak device memory is measured here)" if line.device == "cuda" else "")
                          + ". The issue-8 targets are CPU targets and are not judged here"
                          + ("; the issue-6 targets are (PyTorch CUDA eager as the reference)."
                             if gpu.targets_for(line.device) else "."))
    for key in (k for k in ORDER if k in args.only):
        if key in ("memory", "startup", "compile") and args.cases:
            continue
        if key == "startup":
            if line.device == "cpu":
                part.tables.append(startup.table(with_torch, args.quick, say))
            continue
        if key == "memory":
            if line.device == "cpu":
                part.tables.append(memory.table(with_torch, args.quick, say))
            elif line.device == "cuda":
                torch_cuda = line.reference is not None and line.reference.is_torch
                part.tables.append(device_memory.table(line.device, torch_cuda, args.quick, say))
            continue
        if key == "compile":
            if line.device == "opencl":
                part.tables.append(compilation.table(say))
            part.tables.append(compile_time.table(line.device, progress=say))
            continue
        section = SECTIONS[key](line, args.quick)
        if section is not None and args.cases:
            section.cases = [case for case in section.cases if case.key in args.cases]
        if section is None or not section.cases:
            continue
        if line.device != "cpu":
            device_targets = gpu.targets_for(line.device) if line.reference is not None else {}
            for case in section.cases:
                case.target = device_targets.get(case.key)
        cases.update((case.key, case) for case in section.cases)
        if args.in_process:
            part.tables.append(section.run(say))
        else:
            part.tables.append(isolated.run(section, line, args.quick, args.processes, say))
    return part, cases


def header(args, argv: list[str], torch, message: str, load_start: str, load_end: str, seconds: float) -> list[str]:
    command = "python benchmarks/run.py" + "".join(f" {a}" for a in argv)
    lines = [
        f"Command: `{command}` ({'quick' if args.quick else 'full'} run, {seconds:.0f} s, "
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}).",
        "",
        f"- Machine: {machine.describe()}.",
        f"- Load average (1, 5, 15 min): {load_start} at the start, {load_end} at the end. The machine is "
        "shared with other engineers' test runs.",
        f"- Versions: {machine.versions(torch)}.",
        f"- Threads: {machine.threading(torch)}",
    ]
    if "cuda" in args.device:
        lines.append(f"- CUDA: {gpu.describe(torch) or 'unavailable here (see the cuda part)'}.")
    if message:
        lines.append(f"- Note: {message}")
    lines += [
        "",
        _method(args),
        "",
        "Reading the numbers: with few cores, multi-threaded pools (NumPy's OpenBLAS for Ember, OpenMP for "
        "PyTorch) are very sensitive to other processes, since one pool thread that loses its core stalls the "
        "whole op; the PyTorch 1-thread column and the fastest-round ratios are the views least disturbed by load.",
    ]
    return lines


def _method(args) -> str:
    if args.in_process:
        where = ("(in one process, --in-process: a quick look; the frameworks' thread pools disturb each "
                 "other, so it under-reports) Ember and the other sides run the same code on copies of the same "
                 "inputs; rounds are interleaved (Ember, PyTorch, Ember, PyTorch, ...) and each value is the "
                 "median over rounds. Values whose rounds varied by more than 10 % (interquartile range over "
                 "median) are marked (±IQR). Models start from identical weights (PyTorch's initialisation "
                 "copied into Ember with load_state_dict).")
    else:
        where = (f"(separate processes: the judged figures) Each framework runs alone in "
                 f"{isolated.processes_text(args.processes)} that import only it, taking turns (Ember, PyTorch, Ember, "
                 "PyTorch, ...); each process times the same code on the same inputs, and each value is the "
                 "median over processes of each process's median over rounds, marked (±) with the largest "
                 "distance of one process's median from it. Models start from identical weights (the first "
                 "process's initialisation, loaded by the others with load_state_dict).")
    return (f"Method: {where} Ratios are Ember's cost over the other side's (time per call, or bytes): lower is "
            "better, 1.00× is parity. Where thread pools are involved (GEMM, training, DataLoader, 64×64 matmul) "
            "each turn starts after an untimed 0.15 s pause, so the previous side's still-spinning pool does not "
            "slow the next.")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    start = time.perf_counter()
    say = _progress(start)
    torch, message = load_torch(args.no_torch)
    if message:
        print(message, file=sys.stderr)
    load_start = machine.load_average()

    if args.profile or args.cases:
        line = lineup(args.device[0], torch)
        found = {c.key: c for key in SECTIONS for s in [SECTIONS[key](line, True)] if s for c in s.cases}
        for key in [args.profile] if args.profile else args.cases:
            if key not in found:
                sys.exit(f"no case {key!r}; cases: {', '.join(found)}")
    if args.profile:
        from profiling import profile
        print(profile(found[args.profile], line.subject))
        return

    parts, cases = [], {}
    for device in args.device:
        part, device_cases = run_device(lineup(device, torch), args, torch is not None, say)
        parts.append(part)
        if device == "cpu":
            cases = device_cases

    profiles = []
    if args.profile_missed:
        from profiling import profile
        subject = lineup("cpu", torch).subject
        for result in targets(parts):
            if result.met is False and result.key in cases:
                say(f"profiling {result.name}")
                profiles.append(profile(cases[result.key], subject))

    text = render(header(args, argv, torch, message, load_start, machine.load_average(),
                         time.perf_counter() - start), parts, profiles)
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text)
        say(f"wrote {args.write}")


if __name__ == "__main__":
    main()
