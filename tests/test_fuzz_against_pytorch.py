"""The differential fuzzer (``ember.compat.calls.fuzz``): random calls of every public op PyTorch declares,
on PyTorch and on Ember, counted both ways. A call PyTorch accepts and Ember refuses is the failure this
guards against (code ported from PyTorch would stop there), unless the reviewed list says why; the other
direction and the value mismatches are counted, and the API suite (test_api_conformance.py) holds them to
the reviewed list for the call forms it derives one at a time.

Seeded, so every run draws the same calls; ``EMBER_HYPOTHESIS_PROFILE=thorough`` draws more per op.
"""
from __future__ import annotations

import os

import pytest

import ember
from ember.conformance import profiles

torch = pytest.importorskip("torch")

from ember.compat.calls.fuzz import op_outcomes, tally  # noqa: E402  (needs torch's metadata)
from ember.compat.calls.suite import ops, reachable  # noqa: E402

CALLS_PER_OVERLOAD = {"quick": 6, "thorough": 60}.get(os.environ.get(profiles.ENV_VAR) or profiles.DEFAULT, 60)
OPS = [op for op in ops() if reachable(torch, op)]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.id)
def test_ember_accepts_every_fuzzed_call_pytorch_accepts(op):
    outcomes = op_outcomes(torch, ember, op, CALLS_PER_OVERLOAD)
    counts = tally(outcomes, op.id)
    refused = [f"{o.call}: {o.mismatch}" for o in outcomes if o.direction == "PyTorch accepts"]
    assert counts["unexcused PyTorch accepts"] == 0, \
        f"{op.id}: {counts['unexcused PyTorch accepts']} call(s) PyTorch accepts and Ember refuses " \
        f"({dict(counts)}):\n" + "\n".join(refused)
