"""Memory over long runs: the caches a training loop fills stop growing, however many steps it runs.

Sizes of the caches, not RSS or timing: those are what a leak would grow, and they do not wobble.
"""
from __future__ import annotations

import ember
from ember import nn
from ember.autograd import gradients as autograd_functional
from ember.dispatch.schema import meta
from ember.dispatch.execution import plan


def _cache_sizes() -> dict[str, int]:
    return {"plans": len(plan.table),
            "node_plans": sum(len(p.node_plans) for p in plan.table.values() if isinstance(p, plan.CallPlan)),
            "broadcast": len(meta._broadcast_cache),
            "unit_gradients": len(autograd_functional._units)}


def _training_step(model, optimizer, scheduler, input_shape, classes):
    def step():
        inputs, labels = ember.randn(*input_shape), ember.randint(0, classes, (input_shape[0],))
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        return loss.item()
    return step


def _loops():
    ember.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(4 * 4 * 4, 10))
    for model, optimizer_class, shape, classes in ((mlp, ember.optim.AdamW, (16, 20), 3),
                                                   (cnn, ember.optim.SGD, (8, 1, 8, 8), 10)):
        optimizer = optimizer_class(model.parameters(), lr=0.01)
        scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, 1000)  # a new learning rate every step
        yield _training_step(model, optimizer, scheduler, shape, classes)


def test_training_loops_stop_filling_caches_after_warm_up():
    steps = list(_loops())
    for _ in range(20):
        for step in steps:
            step()
    warm = _cache_sizes()
    for _ in range(200):
        for step in steps:
            step()
    assert _cache_sizes() == warm


def test_attribute_values_that_change_every_step_hold_a_bounded_number_of_plans():
    """A new clamp bound, leaky slope or index at every step must not add a plan per step without end,
    and must not push out the plans of the ops that do not vary."""
    plan.clear()  # only this test's plans: the tests before it in this process may have filled add's share
    x = ember.randn(300, 4, requires_grad=True)
    (x + 1).sum().backward()
    hot = plan.cached("add")
    steps = 3 * plan._PLANS_PER_OP
    for i in range(steps):
        bound = i / steps
        (nn.functional.leaky_relu(x, bound).clamp(min=bound) + 1).sum().backward()
        x[i % 300]
    for name in ("clamp", "leaky_relu", "select"):
        assert plan._PLANS_PER_OP // 2 <= len(plan.cached(name)) <= plan._PLANS_PER_OP, name
    assert all(any(p is q for q in plan.cached("add")) for p in hot)
    sizes = _cache_sizes()
    for i in range(steps):  # as many steps again: nothing grows
        bound = 0.5 + i / (4 * steps)
        (nn.functional.leaky_relu(x, bound).clamp(min=bound) + 1).sum().backward()
        x[(i * 7) % 300]
    assert _cache_sizes()["plans"] <= sizes["plans"]
