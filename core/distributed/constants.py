"""Defaults shared by the process-group code: PyTorch's 30-minute timeout and Ember's override for it."""
from __future__ import annotations

import os
from datetime import timedelta

default_pg_timeout = timedelta(minutes=30)
TIMEOUT_ENV = "EMBER_DIST_TIMEOUT"  # seconds; lets tests and batch jobs shorten every group's default


def resolve_timeout(timeout: timedelta | float | None) -> timedelta:
    """``timeout`` as a timedelta: the argument, else ``EMBER_DIST_TIMEOUT`` seconds, else 30 minutes."""
    if timeout is None:
        text = os.environ.get(TIMEOUT_ENV)
        if not text:
            return default_pg_timeout
        try:
            timeout = float(text)
        except ValueError:
            raise ValueError(f"init_process_group: {TIMEOUT_ENV}={text!r} is not a number of seconds") from None
    if isinstance(timeout, (int, float)):
        timeout = timedelta(seconds=timeout)
    if not isinstance(timeout, timedelta):
        raise TypeError(f"init_process_group: timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    if timeout.total_seconds() <= 0:
        raise ValueError(f"init_process_group: timeout must be positive, got {timeout}")
    return timeout
