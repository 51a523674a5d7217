"""Set-up of the suite's own collection: the hypothesis profile, and skipping everything on a missing backend."""
from __future__ import annotations

from pathlib import Path

import pytest

from ember.conformance import profiles
from ember.conformance import target as target_module
from ember.conformance.plugin import target_of

_HERE = Path(__file__).parent


def pytest_configure(config) -> None:
    profiles.load_for_conformance(config)


@pytest.fixture(scope="session", autouse=True)
def optional_kernels_fall_back(request):
    """``target.optional_kernels_fall_back`` for the whole run; ``test_backend_kernels`` lists those ops."""
    with target_module.optional_kernels_fall_back(target_of(request.config)):
        yield


def pytest_collection_modifyitems(config, items) -> None:
    target = target_of(config)
    ours = [item for item in items if _HERE in item.path.parents]
    # log(0), 0/0 and friends are meant to give inf and NaN here, as in PyTorch: no warning for them
    quiet = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
    skip = pytest.mark.skip(reason=f"backend {target.name!r} unavailable: {target.reason}")
    for item in ours:
        item.add_marker(quiet)
        if not target.available:
            item.add_marker(skip)
