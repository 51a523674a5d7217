"""The differential API suite (``ember.compat.calls``): every public op PyTorch declares in its
``native_functions.yaml``, called in every form its argument parser takes, on PyTorch and on Ember with the same
inputs; and Python's protocols and assignment on tensors. A call both accept must give the same result, a call
PyTorch rejects Ember must reject with an exception of the same kind, and the other way round, unless the
difference is on the reviewed list (``ember.compat.calls.exceptions``), which says why for each.

``python -m ember.compat.calls`` prints the counts per category and every difference.
"""
from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

from ember.compat.calls import exceptions  # noqa: E402  (needs torch's metadata)
from ember.compat.calls.fuzz import op_outcomes  # noqa: E402
from ember.compat.calls.suite import check, check_protocols, ops, reachable  # noqa: E402

OPS = [op for op in ops() if reachable(torch, op)]


def _unexcused(verdicts) -> list[str]:
    return [f"{v.call}: {v.mismatch}" for v in verdicts
            if v.mismatch is not None and exceptions.excuse(v.op, v.category, str(v.call), v.mismatch) is None]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.id)
def test_every_call_form_answers_as_pytorch(op):
    verdicts, _ = check(torch, ember, op)
    differences = _unexcused(verdicts)
    assert not differences, f"{len(differences)} call(s) of {op.id} answer otherwise than PyTorch:\n" + \
        "\n".join(differences)


def test_python_protocols_and_assignment_answer_as_pytorch():
    differences = _unexcused(check_protocols(torch, ember))
    assert not differences, "\n".join(differences)


def test_the_suite_reaches_the_ops_and_forms_it_claims():
    """The suite cannot pass by trying nothing: most of PyTorch's public ops get a base call, and the forms
    cover every category."""
    assert len(OPS) > 600
    categories = set()
    for op in OPS[:80]:
        verdicts, _ = check(torch, ember, op)
        categories |= {v.category for v in verdicts}
    assert {"positional", "keywords", "numpy names", "defaults", "options", "0-d tensors", "numpy scalars",
            "wrong type", "out="} <= categories


def test_every_reviewed_exception_still_matches_a_difference():
    """A stale entry would hide a future difference: each must still be needed, by the suite or the fuzzer
    (test_fuzz_against_pytorch.py, whose calls are seeded)."""
    from test_fuzz_against_pytorch import CALLS_PER_OVERLOAD

    differences = [(v.op, v.category, str(v.call), v.mismatch) for v in check_protocols(torch, ember)]
    for op in OPS:
        differences += [(v.op, v.category, str(v.call), v.mismatch) for v in check(torch, ember, op)[0]]
        differences += [(op.id, "fuzzed", str(o.call), o.mismatch)
                        for o in op_outcomes(torch, ember, op, CALLS_PER_OVERLOAD)]
    used = {exceptions.excuse(*difference) for difference in differences if difference[-1]}
    stale = [entry for entry in exceptions.EXCUSED if entry not in used]
    assert not stale, "entries that match no difference any more:\n" + "\n".join(e.why for e in stale)


def test_the_judge_tells_differences_apart():
    """The comparison itself: a different value, dtype or exception kind is a difference; the same is not."""
    from ember.compat.calls.outcome import Outcome, judge

    same = judge(Outcome(result=torch.ones(2)), Outcome(result=ember.ones(2)))
    assert same is None
    assert "values differ" in judge(Outcome(result=torch.ones(2)), Outcome(result=ember.zeros(2)))
    assert "dtype" in judge(Outcome(result=torch.ones(2)), Outcome(result=ember.ones(2, dtype=ember.float64)))
    assert "Ember accepts" in judge(Outcome(error=TypeError("x")), Outcome(result=ember.ones(2)))
    assert "Ember raises" in judge(Outcome(error=TypeError("x")), Outcome(error=ValueError("y")))
    assert judge(Outcome(error=RuntimeError("x")), Outcome(error=ember.ShapeError("y"))) is None
