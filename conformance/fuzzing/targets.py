"""What the fuzzer calls: every op of the schema (through ``ember.dispatch.ops.F``), every public Tensor method,
and indexing; each call made under a deadline and judged (``verdicts``)."""
from __future__ import annotations

import contextlib
import os
import signal
import traceback
import warnings
from dataclasses import dataclass
from typing import Callable

from hypothesis import HealthCheck, given, seed as hypothesis_seed, settings, strategies as st

import ember
from ember.dispatch import OPS
from ember.dispatch.ops import F
from ember.dispatch.schema import REQUIRED

from .draws import Draws, describe
from .verdicts import CallHung, Finding, judge

_HERE = os.path.abspath(__file__)


@dataclass(frozen=True)
class Target:
    """One thing to fuzz: ``calls(draws)`` is a strategy of (label, function, args, kwargs)."""
    name: str
    calls: Callable[[Draws], object]


@dataclass(frozen=True)
class Report:
    """A finding, with the call that produced it."""
    target: str
    call: str
    finding: Finding
    detail: str


def _op_calls(name: str):
    op = OPS[name]

    def calls(draws: Draws):
        @st.composite
        def draw(data_draw):
            args, kwargs = [], {}
            for param in op.params:
                if param.default is not REQUIRED and data_draw(st.booleans()):
                    continue  # leave it at its default
                value = data_draw(draws.argument(param.type))
                if param.kw_only or kwargs or data_draw(st.booleans()):  # no positional after a keyword
                    kwargs[param.name] = value
                else:
                    args.append(value)
            if data_draw(st.integers(0, 9)) == 0:
                args.append(data_draw(draws.generic))  # one too many
            return f"ember.dispatch.ops.F.{name}", getattr(F, name), args, kwargs
        return draw()
    return calls


def _method_calls(name: str):
    def calls(draws: Draws):
        return st.builds(lambda t, args: (f"Tensor.{name}", getattr(t, name), args, {}),
                         draws.tensors(), st.lists(draws.generic, max_size=3))
    return calls


def _indexing_calls(draws: Draws):
    index = st.one_of(draws.generic, st.tuples(draws.generic, draws.generic))
    getitem = st.builds(lambda t, i: ("Tensor.__getitem__", t.__getitem__, [i], {}), draws.tensors(), index)
    setitem = st.builds(lambda t, i, v: ("Tensor.__setitem__", t.__setitem__, [i, v], {}), draws.tensors(), index,
                        draws.generic)
    return st.one_of(getitem, setitem)


def methods() -> list[str]:
    return sorted(name for name in dir(ember.Tensor) if not name.startswith("_")
                  and callable(getattr(ember.Tensor, name, None)))


def all_targets() -> list[Target]:
    """Ops first, then methods, then indexing, each list sorted: the same order on every run."""
    return ([Target(f"op:{name}", _op_calls(name)) for name in sorted(OPS)]
            + [Target(f"method:{name}", _method_calls(name)) for name in methods()]
            + [Target("indexing", _indexing_calls)])


@contextlib.contextmanager
def _deadline(seconds: float):
    def alarm(signum, frame):
        raise CallHung(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def attempt(label: str, function, args: list, kwargs: dict, deadline_s: float) -> tuple[Finding, str] | None:
    """Make one call; None when it returns or refuses cleanly, else the finding and the call as text."""
    try:
        with warnings.catch_warnings(), _deadline(deadline_s):
            warnings.simplefilter("ignore")
            function(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - judging every exception is the point
        if isinstance(exc, KeyboardInterrupt):
            raise
        finding = judge(exc, _HERE)
        if finding is not None:
            call = ", ".join([describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()])
            detail = "".join(traceback.format_exception(exc)[-3:])
            return finding, f"{label}({call})\n{detail}"
    return None


def fuzz(target: Target, draws: Draws, examples: int, seed: int, deadline_s: float) -> tuple[int, list[Report]]:
    """``examples`` seeded calls of ``target``: how many ran, and the findings. Findings are collected, not
    raised, so hypothesis draws every example instead of stopping to shrink the first."""
    reports: list[Report] = []
    ran = [0]

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(target.calls(draws))
    def run(call):
        ran[0] += 1
        label, function, args, kwargs = call
        found = attempt(label, function, args, kwargs, deadline_s)
        if found is not None:
            reports.append(Report(target.name, found[1].split("\n", 1)[0], found[0], found[1]))

    run()
    return ran[0], reports
