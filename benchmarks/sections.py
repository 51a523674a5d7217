"""The timed sections by key: each builds its cases and sides for a lineup (see harness.Section).

Shared by the benchmark command and by the separate-process mode's child processes, which rebuild
the section they were asked for.
"""
from __future__ import annotations

from typing import Callable

import export_load
import func_transforms
import gemm
import loading
import overhead
import programs
import sparse_mm
import training
from harness import Section
from sides import Lineup

SECTIONS: dict[str, Callable[[Lineup, bool], Section | None]] = {
    "overhead": overhead.section, "gemm": gemm.section, "training": training.section,
    "programs": programs.section, "loading": loading.section,
    "sparse": sparse_mm.section, "func": func_transforms.section, "export": export_load.section}
