"""What each conformance test found, per (op, dtype): a pytest plugin that the report command runs with.

Tests are tied to an op and a dtype by their parameters (``op`` is an ``OpDef``, ``dtype`` an
Ember dtype: see ``cases.op_dtype_params``), so nothing in the suite has to be written for the
report: any test parametrized that way lands in the matrix, every other one in its module's row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest


@dataclass
class Result:
    """One test's outcome: ``passed``, ``failed`` (an error in set-up counts) or ``skipped``."""

    nodeid: str
    module: str  # "test_values"
    test: str  # "test_values"
    op: str | None  # the op it checks, if any
    dtype: str | None  # the dtype it checks, if any
    outcome: str = "passed"
    message: str = ""  # the skip reason or the first line of the failure


def _first_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr).strip().splitlines()[-1] if report.longrepr else ""


class Recorder:
    """Collects a ``Result`` per test; ``on_result(result, done, total)`` is called as each one ends."""

    def __init__(self, on_result: Callable[[Result, int, int], None] | None = None) -> None:
        self.results: list[Result] = []
        self.collection_errors: list[str] = []
        self.total = 0
        self.counts: dict[str, int] = {}  # the suite's tallies of checks (plugin.count)
        self._pending: dict[str, Result] = {}
        self._on_result = on_result

    # -- collection -----------------------------------------------------------------------------
    def pytest_collection_modifyitems(self, items) -> None:
        from ember.dispatch import OpDef, dtype

        for item in items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            op = next((v.name for v in params.values() if isinstance(v, OpDef)), None)
            dt = next((v.name for v in params.values() if isinstance(v, dtype)), None)
            module = item.path.stem if item.path is not None else "?"
            self._pending[item.nodeid] = Result(item.nodeid, module, item.originalname, op, dt)

    def pytest_collection_finish(self, session) -> None:
        self.total = len(session.items)

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collection_errors.append(f"{report.nodeid or 'collection'}: {_first_line(report)}")

    # -- running --------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report) -> None:
        result = self._pending.get(report.nodeid)
        if result is None:
            return
        if report.failed and result.outcome != "failed":
            result.outcome, result.message = "failed", _first_line(report)
        elif report.skipped and result.outcome == "passed":
            result.outcome, result.message = "skipped", _first_line(report)
        if report.when == "teardown":
            del self._pending[report.nodeid]
            self.results.append(result)
            if self._on_result is not None:
                self._on_result(result, len(self.results), self.total)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session) -> None:
        from .plugin import COUNTS
        self.counts = dict(session.config.stash.get(COUNTS, {}))
