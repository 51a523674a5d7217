"""The loops several implementations share: the optimizers' per-parameter template (``Optimizer._step_group``)
and the transformed-rejection proposal loop of the binomial and Poisson samplers."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import optim
from ember.dispatch.ops import F
from ember.dispatch.ops.random.rejection_sampling import transformed_rejection


class _Halving(optim.Optimizer):
    """A minimal optimizer written against the template: one state tensor, one hyperparameter."""

    _state_names = ("last",)

    def __init__(self, params, lr=0.5):
        super().__init__(params, dict(lr=lr))

    def _options(self, group):
        return optim.optimizer.hyperparameters(group, "lr")

    def _update(self, p, grad, state, options):
        p.copy_(p - grad * options["lr"])  # step() runs the update without autograd
        state["last"] = grad.clone()


def test_template_makes_counts_and_rebinds_state():
    p, q = ember.tensor([1.0, 2.0], requires_grad=True), ember.tensor([3.0], requires_grad=True)
    opt = _Halving([p, q])
    p.grad = ember.tensor([2.0, 4.0])
    opt.step()
    opt.step()
    assert list(opt.state[p]) == ["step", "last"] and opt.state[p]["step"] == 2
    assert q not in opt.state or not opt.state[q]  # no gradient, no state
    np.testing.assert_array_equal(p.detach().numpy(), [-1.0, -2.0])
    np.testing.assert_array_equal(opt.state_dict()["state"][0]["last"].numpy(), [2.0, 4.0])


def test_template_reads_hyperparameters_once_per_group():
    p = ember.tensor([1.0], requires_grad=True)
    opt = _Halving([{"params": [p], "lr": 0.25}])
    p.grad = ember.tensor([4.0])
    opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [0.0])


def test_rejection_loop_draws_u_then_v_once_per_round():
    """Every proposal uses two uniforms in this order, so the samplers' random streams stay as they were."""
    a, b, c = ember.full((5,), 0.1, dtype=ember.float64), ember.full((5,), 3.0, dtype=ember.float64), 2.0
    pending = ember.tensor([True, True, False, True, True])
    seen = []

    def accept(k, us, v):
        seen.append((us, v))
        return F.ge(k, -1e9)  # accept every proposal

    out = transformed_rejection(a, b, c, pending, accept, ember.Generator().manual_seed(11))
    assert len(seen) == 1
    generator = ember.Generator().manual_seed(11)
    u = ember.rand(5, generator=generator, dtype=ember.float64).numpy() - 0.5
    v = ember.rand(5, generator=generator, dtype=ember.float64).numpy()
    us = 0.5 - np.abs(u)
    expected = np.floor((2 * 0.1 / us + 3.0) * u + 2.0)
    np.testing.assert_array_equal(seen[0][1].numpy(), v)
    np.testing.assert_array_equal(out.numpy(), np.where(pending.numpy(), expected, 0.0))


@pytest.mark.parametrize("sampler", ["binomial", "poisson"])
def test_rejection_samplers_repeat_under_one_seed(sampler):
    def draw():
        generator = ember.Generator().manual_seed(5)
        if sampler == "binomial":
            return ember.binomial(ember.full((300,), 500.0), ember.full((300,), 0.3), generator=generator)
        return ember.poisson(ember.full((300,), 40.0), generator=generator)
    first, again = draw().numpy(), draw().numpy()
    np.testing.assert_array_equal(first, again)
    mean = {"binomial": 150.0, "poisson": 40.0}[sampler]
    assert abs(first.mean() - mean) < 0.1 * mean
