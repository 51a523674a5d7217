"""Profiling schedules: which of a loop's steps are skipped, warmed up, or recorded (``prof.step()``)."""
from __future__ import annotations

import enum
import warnings
from typing import Callable


class ProfilerAction(enum.Enum):
    """What the profiler does during one step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3  # the last recorded step of a cycle: the trace is handed to on_trace_ready after it


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle steps, ``warmup`` steps
    and ``active`` recorded steps, ``repeat`` times (0: until the loop ends). ``skip_first_wait`` drops
    the first cycle's wait."""
    for name, value, least in (("wait", wait, 0), ("warmup", warmup, 0), ("active", active, 1),
                               ("repeat", repeat, 0), ("skip_first", skip_first, 0),
                               ("skip_first_wait", skip_first_wait, 0)):
        if not isinstance(value, int) or value < least:
            raise ValueError(f"ember.profiler.schedule: {name} must be an int >= {least}, got {value!r}")
    if warmup == 0:
        warnings.warn("ember.profiler.schedule: profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def record_always(step: int) -> ProfilerAction:
    """The schedule of a profile without one: every step is recorded until ``stop()``."""
    return ProfilerAction.RECORD
