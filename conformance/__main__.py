"""``python -m ember.conformance --backend NAME [--report FILE.md] [--profile quick|thorough]``.

Runs the conformance suite (the very tests ``pytest --pyargs ember.conformance --backend NAME``
runs) with a progress display, prints the op × dtype matrix, optionally writes it as a Markdown
report, and exits non-zero when any test failed. Arguments after ``--`` go to pytest.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import profiles


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m ember.conformance", description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu", metavar="NAME",
                        help="device type or device of an installed backend plugin (default: cpu)")
    parser.add_argument("--report", type=Path, metavar="FILE.md", help="also write the report as Markdown")
    parser.add_argument("--profile", choices=("quick", "thorough"),
                        help=f"hypothesis profile (default: ${profiles.ENV_VAR} or {profiles.DEFAULT})")
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="only tests matching EXPR (pytest's -k)")
    parser.add_argument("--brief", action="store_true",
                        help="print only the matrix rows that have a failure or a skip")
    return parser.parse_args(argv), pytest_args


def run(args: argparse.Namespace, pytest_args: list[str]) -> int:
    import pytest

    from .matrix import build
    from .progress import Progress
    from .record import Recorder
    from .report import Run, markdown, text
    from .target import resolve

    target = resolve(args.backend)
    if not target.available:
        print(f"backend {args.backend!r} is unavailable, so nothing can be tested: {target.reason}", file=sys.stderr)
        return 2
    profile = args.profile or os.environ.get(profiles.ENV_VAR) or profiles.DEFAULT
    print(f"ember conformance: backend {target.name} (device {target.device}; "
          f"dtypes {', '.join(d.name for d in target.dtypes)}); hypothesis profile {profile}", file=sys.stderr)
    progress = Progress()
    recorder = Recorder(progress)
    command = ["--pyargs", "ember.conformance", "--backend", args.backend, "-p", "no:cacheprovider",
               "-p", "no:terminal", "--hypothesis-profile", profile]
    if args.keyword:
        command += ["-k", args.keyword]
    started = time.monotonic()
    code = pytest.main(command + pytest_args, plugins=[recorder])
    progress.finish()
    result = Run(args.backend, str(target.device), [d.name for d in target.dtypes], profile,
                 time.monotonic() - started, build(recorder.results, target), recorder.results,
                 recorder.collection_errors, recorder.counts)
    print(text(result, only_problems=args.brief))
    if args.report is not None:
        args.report.write_text(markdown(result), encoding="utf-8")
        print(f"report written to {args.report}", file=sys.stderr)
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        print(f"pytest stopped with exit code {int(code)} ({code.name})", file=sys.stderr)
        return int(code) or 1
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    args, pytest_args = parse(sys.argv[1:] if argv is None else argv)
    return run(args, pytest_args)


if __name__ == "__main__":
    sys.exit(main())
