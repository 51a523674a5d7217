"""The report command's progress display: one self-updating line on a terminal, periodic lines in a log.

Failures are printed as they happen, so a long run shows its problems before the matrix.
"""
from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

from .record import Result


class Progress:
    def __init__(self, stream: TextIO = sys.stderr, interactive: bool | None = None, steps: int = 10) -> None:
        self.stream = stream
        self.interactive = stream.isatty() if interactive is None else interactive
        self.steps = steps  # lines a non-interactive run prints, one per 1/steps of the tests
        self.failed = 0
        self.width = min(shutil.get_terminal_size().columns - 1, 120)
        self._started = time.monotonic()
        self._next_step = 1

    def __call__(self, result: Result, done: int, total: int) -> None:
        if result.outcome == "failed":
            self.failed += 1
            self._clear()
            self.stream.write(f"FAIL {result.nodeid}: {result.message}\n")
        if self.interactive:
            self._line(done, total, f"  {result.nodeid.rsplit('::', 1)[-1]}")
        elif total and done * self.steps >= self._next_step * total:
            self._next_step = done * self.steps // total + 1
            self._line(done, total, "\n")
        self.stream.flush()

    def _line(self, done: int, total: int, tail: str) -> None:
        percent = 100 * done // total if total else 100
        text = (f"[{done:>{len(str(total))}}/{total}] {percent:3d}%  {self.failed} failed  "
                f"{time.monotonic() - self._started:5.0f} s{tail}")
        if self.interactive:
            self.stream.write("\r" + text[:self.width].ljust(self.width))
        else:
            self.stream.write(text)

    def _clear(self) -> None:
        if self.interactive:
            self.stream.write("\r" + " " * self.width + "\r")

    def finish(self) -> None:
        self._clear()
        self.stream.flush()
