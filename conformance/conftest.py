"""Set-up of the suite's own collection: the hypothesis profile, and skipping everything on a missing backend."""
from __future__ import annotations

from pathlib import Path

import pytest

from ember.conformance import profiles
from ember.conformance.plugin import target_of

_HERE = Path(__file__).parent


def pytest_configure(config) -> None:
    profiles.load_for_conformance(config)


def pytest_collection_modifyitems(config, items) -> None:
    target = target_of(config)
    if target.available:
        return
    skip = pytest.mark.skip(reason=f"backend {target.name!r} unavailable: {target.reason}")
    for item in items:
        if _HERE in Path(item.fspath).parents:
            item.add_marker(skip)
