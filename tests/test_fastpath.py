"""The elementwise fast path and the cached autograd node plans: taken when they should be, and the same answers.

No timings here (CI stays deterministic): these check that the cheap paths are really the ones that run,
which a change of import order once silently undid (the fast path then fell back to the generic call).
"""
from __future__ import annotations

import pytest

import ember
from ember.dispatch import cached_plans
from ember.dispatch.execution import fastpath
from ember.dispatch.ops import F
from ember.dispatch.schema import OPS


@pytest.fixture
def generic_call_forbidden(monkeypatch):
    def refuse(op, args, kwargs):
        raise AssertionError(f"{op.name} took the generic path")
    monkeypatch.setattr(fastpath, "call", refuse)


def test_same_dtype_elementwise_calls_skip_the_generic_path(generic_call_forbidden):
    x = ember.tensor([1.0, 2.0, 3.0])
    assert (x + x).tolist() == [2.0, 4.0, 6.0]
    assert (x * 2.0).tolist() == [2.0, 4.0, 6.0]
    assert (1 - x).tolist() == [0.0, -1.0, -2.0]
    assert x.neg().tolist() == [-1.0, -2.0, -3.0]


def test_fast_path_records_the_same_graph(generic_call_forbidden):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * x + x
    assert y.grad_fn.name() == "AddBackward"
    y.backward(ember.tensor([1.0, 1.0]))
    assert x.grad.tolist() == [3.0, 5.0]


def test_mixed_dtypes_still_promote_through_the_generic_path():
    a = ember.tensor([1, 2], dtype=ember.int32)
    b = ember.tensor([0.5, 0.5])
    assert (a + b).dtype is ember.float32 and (a + b).tolist() == [1.5, 2.5]


def test_node_plans_follow_which_inputs_need_gradients():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0])
    (a * b).sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None
    b.requires_grad_()
    a.grad = None
    (a * b).sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]
    patterns = {key for plan in cached_plans("mul") for key in plan.node_plans}
    assert {0b01, 0b11} <= patterns  # one node plan per pattern of inputs needing grad (bit i: input i)


def test_a_replaced_derivative_is_picked_up(monkeypatch):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.exp().sum().backward()
    monkeypatch.setattr(OPS["exp"], "derivative", lambda grad, result: F.mul(grad, 0.0))
    x.grad = None
    x.exp().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
