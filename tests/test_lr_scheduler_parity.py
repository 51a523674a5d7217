"""ember.optim.lr_scheduler against torch.optim.lr_scheduler over many steps: every scheduler and mode, chained
and sequential combinations, momentum cycling, fractional epochs, and state_dict round trips mid-run."""
from __future__ import annotations

import warnings

import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler

torch = pytest.importorskip("torch")

STEPS = 100


def _optimizers(kind: str, lrs=(0.1, 0.02)):
    """The same two-group optimizer in Ember and in torch."""
    kwargs = {"SGD": dict(momentum=0.9), "Adam": {}, "Adagrad": {}}[kind]

    def make(lib, module):
        params = [lib.tensor([1.0], requires_grad=True) for _ in lrs]
        return getattr(module, kind)([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)], **kwargs)
    return make


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum", 0.0) for g in opt.param_groups]


def _assert_same(ours_opt, theirs_opt, ours, theirs, what):
    assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12, abs=1e-15), what
    assert [g["lr"] for g in ours_opt.param_groups] == pytest.approx([g["lr"] for g in theirs_opt.param_groups],
                                                                     rel=1e-12, abs=1e-15), what
    assert _momenta(ours_opt) == pytest.approx(_momenta(theirs_opt), rel=1e-12), what
    assert getattr(ours, "last_epoch", None) == getattr(theirs, "last_epoch", None), what  # Chained has none


def _compare(make, kind="SGD", steps=STEPS, resume_at=STEPS // 2):
    """Step both for ``steps`` steps, checking lrs and momenta each time; at ``resume_at`` rebuild Ember's
    optimizer and scheduler and resume them from their state dicts."""
    make_opt = _optimizers(kind)
    ours_opt, theirs_opt = make_opt(ember, optim), make_opt(torch, torch.optim)
    ours, theirs = make(lr_scheduler, ours_opt), make(torch.optim.lr_scheduler, theirs_opt)
    lrs = []
    for step in range(steps):
        _assert_same(ours_opt, theirs_opt, ours, theirs, f"step {step}")
        lrs.append(ours.get_last_lr()[0])
        if step == resume_at:
            opt_state, sched_state = ours_opt.state_dict(), ours.state_dict()
            ours_opt = make_opt(ember, optim)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours = make(lr_scheduler, ours_opt)
            ours_opt.load_state_dict(opt_state)
            ours.load_state_dict(sched_state)
            _assert_same(ours_opt, theirs_opt, ours, theirs, f"resumed at step {step}")
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
    _assert_same(ours_opt, theirs_opt, ours, theirs, "at the end")
    assert len(set(lrs)) > 2  # the schedule moves


class Halving:
    """A callable object (not a function): its attributes travel in the scheduler's state_dict."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, x):
        return self.base ** (x - 1)


SCHEDULERS = {
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "MultiplicativeLR-per-group": lambda m, o: m.MultiplicativeLR(
        o, lr_lambda=[lambda e: 0.95 if e % 3 else 1.02, lambda e: 1 - 1 / (e + 10)]),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=60),
    "PolynomialLR-power2": lambda m, o: m.PolynomialLR(o, total_iters=40, power=2.0),
    "PolynomialLR-half": lambda m, o: m.PolynomialLR(o, total_iters=80, power=0.5),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=7),
    "CyclicLR-asymmetric": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.001], max_lr=[0.1, 0.05], step_size_up=4,
                                                   step_size_down=11, base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                    mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=6, mode="exp_range",
                                                  gamma=0.97),
    "CyclicLR-scale_fn-cycle": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                       scale_fn=lambda x: 1 / x),
    "CyclicLR-scale_fn-iterations": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                            scale_fn=lambda x: 0.99 ** x, scale_mode="iterations"),
    "CyclicLR-callable-object": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                        scale_fn=Halving()),
    "CyclicLR-no-momentum": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=8,
                                                    cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=10),
    "CosineAnnealingWarmRestarts-T_mult": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                                     eta_min=1e-3),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=10),
                                                         m.ExponentialLR(o, gamma=0.97)]),
    "ChainedScheduler-three": lambda m, o: m.ChainedScheduler(
        [m.LinearLR(o, start_factor=0.2, total_iters=8), m.MultiStepLR(o, milestones=[20, 50, 70], gamma=0.5),
         m.MultiplicativeLR(o, lr_lambda=lambda e: 0.995)], optimizer=o),
    "ChainedScheduler-cosine-step": lambda m, o: m.ChainedScheduler([m.CosineAnnealingLR(o, T_max=15),
                                                                     m.StepLR(o, step_size=25, gamma=0.3)]),
    "SequentialLR-warmup-polynomial": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=10), m.PolynomialLR(o, total_iters=80, power=2.0)],
        milestones=[10]),
    "SequentialLR-warmup-restarts": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.3, total_iters=5), m.CosineAnnealingWarmRestarts(o, T_0=12, T_mult=2)],
        milestones=[5]),
    "SequentialLR-of-chained": lambda m, o: m.SequentialLR(
        o, [m.ExponentialLR(o, gamma=0.9),
            m.MultiplicativeLR(o, lr_lambda=lambda e: 0.98)], milestones=[30]),
    "OneCycleLR-resumed": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS + 1),
}


@pytest.mark.parametrize("name", SCHEDULERS)
def test_lr_sequence_matches_torch_with_a_resume_half_way(name):
    _compare(SCHEDULERS[name])


@pytest.mark.parametrize("name", ["CyclicLR-asymmetric", "CyclicLR-exp_range", "CosineAnnealingWarmRestarts-T_mult",
                                  "PolynomialLR-power2"])
def test_adam_betas_and_optimizers_without_momentum(name):
    _compare(SCHEDULERS[name], kind="Adam")


def test_cyclic_momentum_needs_an_optimizer_with_momentum():
    for module, opt in ((lr_scheduler, _optimizers("Adagrad")(ember, optim)),
                        (torch.optim.lr_scheduler, _optimizers("Adagrad")(torch, torch.optim))):
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            module.CyclicLR(opt, base_lr=0.01, max_lr=0.1)
    _compare(SCHEDULERS["CyclicLR-no-momentum"], kind="Adagrad")


@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_with_fractional_epochs_match_torch(T_mult):
    """step(epoch + batch / batches), as SGDR is meant to be used, including jumps back and forth."""
    make_opt = _optimizers("SGD")
    ours_opt, theirs_opt = make_opt(ember, optim), make_opt(torch, torch.optim)
    ours = lr_scheduler.CosineAnnealingWarmRestarts(ours_opt, T_0=4, T_mult=T_mult, eta_min=0.001)
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs_opt, T_0=4, T_mult=T_mult, eta_min=0.001)
    batches = 7
    epochs = [e + b / batches for e in range(30) for b in range(batches)] + [2.5, 0, 13.25, 100.75]
    for epoch in epochs:
        ours.step(epoch)
        theirs.step(epoch)
        _assert_same(ours_opt, theirs_opt, ours, theirs, f"epoch {epoch}")
        assert ours.T_cur == pytest.approx(theirs.T_cur) and ours.T_i == theirs.T_i
    with pytest.raises(ValueError, match="Expected non-negative epoch"):
        ours.step(-1)


@pytest.mark.parametrize("epoch", [0, 7, 33, 64])
def test_polynomial_step_with_epoch_uses_the_closed_form_like_torch(epoch):
    make_opt = _optimizers("SGD")
    ours_opt, theirs_opt = make_opt(ember, optim), make_opt(torch, torch.optim)
    ours = lr_scheduler.PolynomialLR(ours_opt, total_iters=50, power=1.5)
    theirs = torch.optim.lr_scheduler.PolynomialLR(theirs_opt, total_iters=50, power=1.5)
    with pytest.warns(UserWarning):
        ours.step(epoch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.step(epoch)
    _assert_same(ours_opt, theirs_opt, ours, theirs, f"epoch {epoch}")


def test_public_names_match_torch():
    assert sorted(lr_scheduler.__all__) == sorted(torch.optim.lr_scheduler.__all__)
    assert issubclass(lr_scheduler._LRScheduler, lr_scheduler.LRScheduler)
    assert not hasattr(lr_scheduler.LRScheduler, "print_lr")  # removed in PyTorch 2.13, with `verbose`
    assert hasattr(torch.optim.lr_scheduler.LRScheduler, "print_lr") is False


def test_legacy_subclass_of_lr_scheduler_alias_works():
    class Halve(lr_scheduler._LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    opt = _optimizers("SGD")(ember, optim)
    scheduler = Halve(opt)
    for _ in range(3):
        opt.step()
        scheduler.step()
    assert scheduler.get_last_lr() == pytest.approx([0.1 / 8, 0.02 / 8])


def test_constructor_errors_match_torch():
    cases = [
        lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, mode="sawtooth"),
        lambda m, o: m.CyclicLR(o, base_lr=[0.01], max_lr=0.1),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2.5),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=0),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, eta_min="0"),
        lambda m, o: m.MultiplicativeLR(o, lr_lambda=[lambda e: 1.0]),
        lambda m, o: m.ChainedScheduler([]),
        lambda m, o: m.ChainedScheduler([m.ReduceLROnPlateau(o)]),
    ]
    make_opt = _optimizers("SGD")
    for make in cases:
        with pytest.raises((ValueError, TypeError)) as theirs:
            make(torch.optim.lr_scheduler, make_opt(torch, torch.optim))
        with pytest.raises(theirs.type) as ours:
            make(lr_scheduler, make_opt(ember, optim))
        assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        lr_scheduler.MultiplicativeLR(make_opt(ember, optim), lr_lambda=0.9)
    other = make_opt(ember, optim)
    with pytest.raises(ValueError, match="same optimizer"):
        lr_scheduler.ChainedScheduler([lr_scheduler.StepLR(make_opt(ember, optim), 3), lr_scheduler.StepLR(other, 3)])
