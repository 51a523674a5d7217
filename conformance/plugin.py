"""The conformance suite's pytest plugin, loaded (through the ``pytest11`` entry point) in every pytest run.

It must stay cheap and harmless there: it adds the ``--backend`` option, registers the
hypothesis profiles when a profile is asked for, and offers the ``backend``, ``device``
and ``make`` fixtures (to this suite and to a backend's own tests). Collecting the
suite itself is set up by ``conftest.py`` beside it.
"""
from __future__ import annotations

import zlib

import pytest

from . import profiles

TARGET = pytest.StashKey()  # the resolved Target, once something asked for it
SUMMARY = pytest.StashKey()  # lines for the terminal summary, added by the suite's tests
COUNTS = pytest.StashKey()  # what -> how many checks of that kind ran, for the terminal summary


def count(config, what: str, n: int = 1) -> None:
    """Add ``n`` to the tally of ``what`` (e.g. "first-order gradient checks") shown after the run."""
    counts = config.stash.setdefault(COUNTS, {})
    counts[what] = counts.get(what, 0) + n


def pytest_addoption(parser) -> None:
    group = parser.getgroup("ember", "Ember backend conformance (pytest --pyargs ember.conformance)")
    group.addoption("--backend", default="cpu", metavar="NAME",
                    help="the Ember backend (device type or device, e.g. cpu, opencl, cuda:1) that "
                         "ember.conformance tests; default: cpu")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config) -> None:
    # hypothesis loads --hypothesis-profile in its own pytest_configure: ours must be registered first.
    if profiles.requested(config):
        profiles.register()


def target_of(config):
    """The backend under test, resolved once per session."""
    target = config.stash.get(TARGET, None)
    if target is None:
        from .target import resolve
        target = config.stash[TARGET] = resolve(config.getoption("--backend"))
    return target


def _is_conformance_run(config) -> bool:
    return any("conformance" in str(arg) for arg in config.args)


def pytest_report_header(config):
    if not _is_conformance_run(config):
        return None
    target = target_of(config)
    if not target.available:
        return f"ember backend: {target.name}: UNAVAILABLE ({target.reason}); every conformance test skips"
    return (f"ember backend: {target.name} (device {target.device}; dtypes "
            f"{', '.join(d.name for d in target.dtypes)}); hypothesis profile: "
            f"{profiles.requested(config) or profiles.DEFAULT}")


def pytest_terminal_summary(terminalreporter, config) -> None:
    lines = config.stash.get(SUMMARY, None)
    target = config.stash.get(TARGET, None)
    if target is not None and not target.available and _is_conformance_run(config):
        lines = [f"backend {target.name!r} is unavailable, so every test was skipped: {target.reason}"]
    counts = config.stash.get(COUNTS, {})
    lines = list(lines or []) + [f"{what}: {n}" for what, n in counts.items()]
    if lines:
        terminalreporter.section("ember conformance")
        for line in lines:
            terminalreporter.write_line(line)


# -- fixtures ----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def backend(request):
    """The backend under test (a ``Target``); skips when it cannot run here."""
    target = target_of(request.config)
    if not target.available:
        pytest.skip(f"backend {target.name!r} unavailable: {target.reason}")
    return target


@pytest.fixture(scope="session")
def device(backend):
    """The ember device the backend under test computes on."""
    return backend.device


@pytest.fixture
def make(backend, request):
    """``make(shape, *, dtype, low, high, noncontiguous, nonzero)``: seeded tensors on the device under test.

    The default dtype is the test's ``dtype`` parameter (float32 without one); the seed comes
    from the test id, so every run of a test sees the same values.
    """
    from ember import float32

    from .make import Maker
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    return Maker(backend, params.get("dtype", float32), zlib.crc32(request.node.nodeid.encode()))
