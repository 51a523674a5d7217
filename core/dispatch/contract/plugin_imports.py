"""Imports third-party backend plugins all at once, each in a daemon thread, under one shared time limit.

Starting every import together makes N hanging plugins cost one timeout, not N. Imports of different modules run
side by side (Python locks each module separately; two entry points of one module simply wait for each other). A
plugin still importing at the deadline is abandoned: its thread stays blocked in the background, never retried.
"""
from __future__ import annotations

import math
import os
import queue
import threading
import time
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Iterator

TIMEOUT_ENV_VAR = "EMBER_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 30.0  # seconds; generous, as a plugin may import a large array library


@dataclass(frozen=True)
class Imported:
    """One plugin's import outcome: the loaded object, or why there is none."""
    entry_point: EntryPoint
    plugin: object = None
    failure: str | None = None


@dataclass(frozen=True)
class StillImporting:
    """The plugins still importing ``notice_after`` seconds in, in entry-point order (announced once)."""
    names: tuple[str, ...]


def import_timeout() -> float:
    """Seconds a third-party plugin may take to import before it is abandoned."""
    try:
        return float(os.environ.get(TIMEOUT_ENV_VAR, DEFAULT_IMPORT_TIMEOUT))
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT


def describe(exc: BaseException) -> str:
    """``Type: message``, or just the type where the message is empty (``SystemExit()``, ``KeyboardInterrupt``)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def import_failure(ep: EntryPoint, exc: BaseException) -> str:
    return f"failed to import ({ep.value}): {describe(exc)}"


def import_all(entry_points: list[EntryPoint], timeout: float,
               notice_after: float | None = None) -> Iterator[Imported | StillImporting]:
    """``ep.load()`` for every entry point at once: each outcome in arrival order, then the abandoned ones.

    With ``notice_after``, one ``StillImporting`` comes that many seconds in if some imports are still running, so
    a caller can say what it is waiting for; a quick run never sees it.
    """
    arrivals: queue.SimpleQueue = queue.SimpleQueue()
    for index, ep in enumerate(entry_points):
        threading.Thread(target=_load_into, args=(arrivals, index, ep), name=f"ember-plugin-import-{ep.name}",
                         daemon=True).start()
    started = time.monotonic()
    deadline = started + timeout
    notice_at = math.inf if notice_after is None else started + notice_after
    running = dict(enumerate(entry_points))
    while running:
        try:  # a zero wait still takes an outcome that is already there, so none is lost at the deadline
            index, plugin, error = arrivals.get(timeout=max(0.0, min(deadline, notice_at) - time.monotonic()))
        except queue.Empty:
            if time.monotonic() >= deadline:
                break
            notice_at = math.inf
            yield StillImporting(tuple(ep.name for ep in running.values()))
            continue
        ep = running.pop(index)
        yield Imported(ep, plugin) if error is None else Imported(ep, failure=import_failure(ep, error))
    for ep in running.values():
        yield Imported(ep, failure=f"did not finish importing ({ep.value}) within {timeout:g} s and was abandoned "
                                   f"(set {TIMEOUT_ENV_VAR} to wait longer)")


def _load_into(arrivals: queue.SimpleQueue, index: int, ep: EntryPoint) -> None:
    try:
        plugin, error = ep.load(), None
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: a plugin cannot end the process
        plugin, error = None, exc
    arrivals.put((index, plugin, error))
