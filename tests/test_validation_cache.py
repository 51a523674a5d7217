"""The dispatcher's plan cache: a repeated call skips the checks, yet every call that the checks would refuse
is still refused, and ops whose checks read tensor values are validated on every call.

No timings (CI stays deterministic): these check which calls are cached and that the answers and errors match.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatch import cached_plans
from ember.dispatch.execution import dispatcher, plan
from ember.dispatch.schema.errors import ShapeError
from ember.dispatch.ops import F
from ember.dispatch.schema import OPS


def test_a_repeated_call_is_validated_once(monkeypatch):
    x = ember.tensor(np.arange(21.0, dtype=np.float32).reshape(3, 7))
    expected = np.arange(21.0).reshape(3, 7).sum(1).tolist()
    assert F.sum(x, 1).tolist() == expected
    calls = []
    meta = OPS["sum"].meta
    monkeypatch.setattr(OPS["sum"], "meta", lambda *v: calls.append(v) or meta(*v))
    assert F.sum(x, 1).tolist() == expected
    assert F.sum(x, -1).tolist() == expected  # another attribute value: validated, then cached
    assert F.sum(x, -1).tolist() == expected
    assert len(calls) == 1


def test_cached_calls_still_refuse_what_validation_refuses():
    x = ember.tensor([1.0, 2.0, 3.0])
    F.sum(x, 0)
    with pytest.raises(TypeError, match="bool"):
        F.sum(x, True)  # equal to 1 as a key, but not a valid dim
    with pytest.raises(IndexError):
        F.sum(x, 1)
    with pytest.raises(ShapeError):
        F.sum(ember.zeros((2, 3)), 0).view(4)


def test_view_keys_on_strides():
    base = ember.zeros((4, 6))
    assert tuple(base[:, :4].contiguous().view(16).shape) == (16,)
    with pytest.raises(ShapeError, match="strides"):
        base[:, :4].view(16)  # same shape and dtype, other strides: refused as before


def test_ops_whose_checks_read_values_are_never_cached():
    weight = ember.randn(5, 3)
    assert tuple(F.embedding(ember.tensor([0, 4]), weight).shape) == (2, 3)
    assert dispatcher.validates_every_call(OPS["embedding"])
    assert not dispatcher.validates_every_call(OPS["sum"])
    with pytest.raises(IndexError, match="out of range"):
        F.embedding(ember.tensor([0, 5]), weight)  # same shapes and dtypes as the call above
    labels = ember.tensor([1, 2])
    F.one_hot(labels, 3)
    with pytest.raises(ValueError):
        F.one_hot(ember.tensor([1, 3]), 3)


def test_cross_entropy_checks_every_new_target():
    logits = ember.randn(2, 3)
    for _ in range(3):
        ember.nn.functional.cross_entropy(logits, ember.tensor([0, 2]))
    with pytest.raises(IndexError):
        ember.nn.functional.cross_entropy(logits, ember.tensor([0, 3]))


def test_grad_mode_is_part_of_the_key():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.no_grad():
        assert F.sum(x).grad_fn is None
    out = F.sum(x)
    assert out.grad_fn is not None
    out.backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_the_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(plan, "_CACHE_SIZE", 64)
    x = ember.zeros((2, 3))
    for n in range(80):
        F.expand(x[:1], (n + 1, 3))
    assert 0 < len(cached_plans("expand")) <= 64
