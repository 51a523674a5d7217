"""Where a user's call entered Ember: warnings point there, not at Ember's own frames."""
from __future__ import annotations

import os
import sys
from pathlib import Path

EMBER_DIR = str(Path(__file__).resolve().parents[2]) + os.sep  # the ember package, whose frames a warning skips


def caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning, issued by the function calling this, at the first frame
    outside Ember: the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(EMBER_DIR):
        frame, level = frame.f_back, level + 1
    return level
