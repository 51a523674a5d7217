"""Fuzzed calls of every op of the schema, every Tensor method and indexing, on the backend under test: each
returns or fails cleanly (``fuzzing.verdicts``): no internal or off-type errors, no vague messages, no hangs.

Seeded: the quick profile (CI) draws the same calls on every run, fewer of them on a device than on the cpu
(``QUICK_EXAMPLES``), which keeps CI's cold OpenCL run (every new kernel compiled) within its time;
``thorough`` draws many more at random. ``python -m ember.conformance.fuzzing`` runs a timed campaign instead.
"""
from __future__ import annotations

import pytest

from ember.conformance import profiles
from ember.conformance.fuzzing.campaign import address_space_capped
from ember.conformance.fuzzing.draws import Draws
from ember.conformance.fuzzing.targets import all_targets, fuzz
from ember.conformance.plugin import target_of

#: Calls per target under ``quick``: the cpu has every kernel at hand; a device compiles one per new dtype and
#: shape class, which a cold CI run pays for.
QUICK_EXAMPLES = {"cpu": 8}
QUICK_DEVICE_EXAMPLES = 2
THOROUGH_EXAMPLES = 200
SEED = 20261130
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def draws(request):
    target = target_of(request.config)
    if not target.available:
        pytest.skip(f"backend {target.name!r} unavailable: {target.reason}")
    with address_space_capped(target.device):
        yield Draws(target.device, target.dtypes)


@pytest.fixture(scope="module")
def examples(request, draws):
    if (profiles.requested(request.config) or profiles.DEFAULT) != "quick":
        return THOROUGH_EXAMPLES
    return QUICK_EXAMPLES.get(draws.device.type, QUICK_DEVICE_EXAMPLES)


@pytest.mark.parametrize("target", all_targets(), ids=lambda t: t.name)
def test_fuzzed_calls_fail_cleanly(target, draws, examples):
    _, reports = fuzz(target, draws, examples, SEED, DEADLINE_S)
    assert not reports, "\n\n".join(f"[{r.finding.kind}] {r.finding.why}\n{r.detail}" for r in reports)
