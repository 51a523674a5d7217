"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the lr (and momentum) sequences over 30 steps."""
from __future__ import annotations

import copy
import math
import warnings

import pytest
import torch

import ember
from ember import optim
from ember.optim import lr_scheduler

STEPS = 30


def _optimizers(kind="SGD", lrs=(0.1, 0.02)):
    """The same two-group optimizer in Ember and in torch."""
    ours = [ember.tensor([1.0], requires_grad=True) for _ in lrs]
    theirs = [torch.tensor([1.0], requires_grad=True) for _ in lrs]
    kwargs = dict(momentum=0.9) if kind == "SGD" else {}
    return (getattr(optim, kind)([{"params": [p], "lr": lr} for p, lr in zip(ours, lrs)], **kwargs),
            getattr(torch.optim, kind)([{"params": [p], "lr": lr} for p, lr in zip(theirs, lrs)], **kwargs))


def _assert_same_lrs(ours, theirs):
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def _compare(make, kind="SGD", steps=STEPS, momentum=False):
    ember_opt, torch_opt = _optimizers(kind)
    ours = make(lr_scheduler, ember_opt)
    theirs = make(torch.optim.lr_scheduler, torch_opt)
    history = []
    for _ in range(steps):
        _assert_same_lrs(ours.get_last_lr(), theirs.get_last_lr())
        _assert_same_lrs([g["lr"] for g in ember_opt.param_groups], [g["lr"] for g in torch_opt.param_groups])
        if momentum:
            key = "momentum" if kind == "SGD" else "betas"
            for a, b in zip(ember_opt.param_groups, torch_opt.param_groups):
                assert a[key] == pytest.approx(b[key], rel=1e-12)
        history.append(ours.get_last_lr()[0])
        ember_opt.step()
        torch_opt.step()
        ours.step()
        theirs.step()
    _assert_same_lrs(ours.get_last_lr(), theirs.get_last_lr())
    assert ours.last_epoch == theirs.last_epoch
    return history


SCHEDULERS = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 10, 10, 25], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=12),
    "LinearLR-decay": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=20),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=8, eta_min=1e-3),
    "CosineAnnealingLR-long": lambda m, o: m.CosineAnnealingLR(o, T_max=40),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 1 / (1 + e), lambda e: e // 5 + 1]),
    "OneCycleLR-cos": lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=STEPS),
    "OneCycleLR-linear": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 2.0], epochs=3, steps_per_epoch=10,
                                                   anneal_strategy="linear", pct_start=0.25),
    "OneCycleLR-three-phase": lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=STEPS, three_phase=True,
                                                        div_factor=10.0, final_div_factor=100.0),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=15)], milestones=[6]),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.8),
            m.StepLR(o, step_size=3, gamma=0.5)], milestones=[5, 15]),
}


@pytest.mark.parametrize("name", SCHEDULERS)
def test_lr_sequence_matches_torch(name):
    history = _compare(SCHEDULERS[name], momentum=name.startswith("OneCycle"))
    assert len(set(history)) > 1  # the schedule actually moves


@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_cycles_adam_beta1_like_torch(three_phase):
    _compare(lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=STEPS, three_phase=three_phase,
                                       base_momentum=0.8, max_momentum=0.9), kind="Adam", momentum=True)


def test_one_cycle_rejects_too_many_steps_and_bad_arguments():
    opt = _optimizers()[0]
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    opt.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()
    with pytest.raises(ValueError, match="total_steps OR"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="pct_start"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="step")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        lr_scheduler.OneCycleLR(opt, max_lr=[0.1], total_steps=10)
    with pytest.raises(ValueError, match="momentum or beta1"):
        lr_scheduler.OneCycleLR(optim.Adagrad([ember.tensor([1.0], requires_grad=True)]), max_lr=0.1,
                                total_steps=10)


def test_cosine_annealing_closes_on_the_closed_form():
    opt = _optimizers()[0]
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    for epoch in range(1, 25):
        opt.step()
        sched.step()
        expected = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(expected, rel=1e-10)


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.89999, 0.96, 0.97, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.49, 0.6,
                   0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


@pytest.mark.parametrize("kwargs", [
    dict(patience=2),
    dict(patience=1, factor=0.5, cooldown=2),
    dict(patience=0, factor=0.5, min_lr=[0.02, 0.015]),
    dict(patience=1, threshold=0.1, threshold_mode="abs"),
    dict(mode="max", patience=2, factor=0.2, min_lr=1e-3),
    dict(mode="max", patience=1, threshold=0.05, threshold_mode="abs", eps=0.05),
])
def test_reduce_on_plateau_matches_torch(kwargs):
    ember_opt, torch_opt = _optimizers()
    ours = lr_scheduler.ReduceLROnPlateau(ember_opt, **kwargs)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(torch_opt, **kwargs)
    seen = set()
    for metric in PLATEAU_METRICS:
        ours.step(metric)
        theirs.step(metric)
        _assert_same_lrs(ours.get_last_lr(), theirs.get_last_lr())
        assert (ours.num_bad_epochs, ours.cooldown_counter, ours.best) == \
            (theirs.num_bad_epochs, theirs.cooldown_counter, theirs.best)
        seen.add(ours.get_last_lr()[0])
    assert len(seen) > 1


def test_reduce_on_plateau_errors():
    opt = _optimizers()[0]
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode sideways is unknown"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="sideways")
    with pytest.raises(ValueError, match="threshold mode"):
        lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="log")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.ReduceLROnPlateau(object())


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR-cos", "SequentialLR",
                                  "LambdaLR"])
def test_state_dict_round_trip_continues_identically(name):
    make = SCHEDULERS[name]
    ember_opt = _optimizers()[0]
    reference = make(lr_scheduler, ember_opt)
    expected = []
    for _ in range(STEPS - 1):
        ember_opt.step()
        reference.step()
        expected.append(reference.get_last_lr())

    opt = _optimizers()[0]
    sched = make(lr_scheduler, opt)
    for _ in range(10):
        opt.step()
        sched.step()
    saved_opt, saved_sched = copy.deepcopy(opt.state_dict()), copy.deepcopy(sched.state_dict())
    assert "optimizer" not in saved_sched

    resumed_opt = _optimizers()[0]
    resumed = make(lr_scheduler, resumed_opt)  # build the scheduler first, then load both, as PyTorch advises
    resumed_opt.load_state_dict(saved_opt)
    resumed.load_state_dict(saved_sched)
    got = expected[:10]
    for _ in range(STEPS - 11):
        resumed_opt.step()
        resumed.step()
        got.append(resumed.get_last_lr())
    assert got == expected


def test_resuming_with_last_epoch_needs_initial_lr():
    opt = _optimizers()[0]
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(opt, step_size=3, last_epoch=4)
    lr_scheduler.StepLR(opt, step_size=3)
    resumed = lr_scheduler.StepLR(opt, step_size=3, last_epoch=4)
    assert resumed.base_lrs == [0.1, 0.02] and resumed.last_epoch == 5


def test_stepping_with_an_epoch_uses_the_closed_form_and_warns():
    opt = _optimizers()[0]
    sched = lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="deprecated"):
        sched.step(7)
    assert sched.last_epoch == 7 and sched.get_last_lr() == pytest.approx([0.1 * 0.25, 0.02 * 0.25])


def test_scheduler_step_before_optimizer_step_warns():
    opt = _optimizers()[0]
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = _optimizers()[0]
    sched2 = lr_scheduler.ExponentialLR(opt2, gamma=0.5)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()


def test_scheduler_construction_errors():
    opt = _optimizers()[0]
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        lr_scheduler.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        lr_scheduler.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        lr_scheduler.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="number of milestones"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2)], milestones=[3])
    with pytest.raises(ValueError, match="same optimizer"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2), lr_scheduler.StepLR(_optimizers()[0], 2)],
                                  milestones=[3])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2), lr_scheduler.ReduceLROnPlateau(opt)],
                                  milestones=[3])
