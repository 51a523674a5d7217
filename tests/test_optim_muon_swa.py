"""Muon, swa_utils (AveragedModel, SWALR, update_bn, the avg functions) and swap_in_optimizer_params_and_state
against torch.optim, step by step."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.optim import swa_utils

torch = pytest.importorskip("torch")


def _pair(shape=(4, 6), seed=0):
    rng = np.random.default_rng(seed)
    value = rng.standard_normal(shape).astype(np.float32)
    return ember.tensor(value, requires_grad=True), torch.tensor(value, requires_grad=True)


def _grads(steps, shape, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(steps)]


@pytest.mark.parametrize("shape", [(4, 6), (6, 3)])
@pytest.mark.parametrize("options", [{}, {"nesterov": False, "weight_decay": 0.0},
                                     {"adjust_lr_fn": "match_rms_adamw", "momentum": 0.5}])
def test_muon_matches_torch_step_by_step(shape, options):
    ours, theirs = _pair(shape)
    opt_e, opt_t = optim.Muon([ours], lr=0.02, **options), torch.optim.Muon([theirs], lr=0.02, **options)
    for grad in _grads(4, shape):
        ours.grad, theirs.grad = ember.tensor(grad), torch.tensor(grad)
        opt_e.step()
        opt_t.step()
        # the Newton-Schulz iteration runs in bfloat16 in both: agreement to bfloat16's precision
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=0, atol=2e-3)
    np.testing.assert_allclose(opt_e.state[ours]["momentum_buffer"].numpy(),
                               opt_t.state[theirs]["momentum_buffer"].numpy(), rtol=1e-6, atol=1e-6)


def test_muon_orthogonalizes_and_rejects_what_torch_rejects():
    from ember.optim.muon import zeropower_via_newtonschulz
    g = ember.randn(8, 5, dtype=ember.float32)
    o = zeropower_via_newtonschulz(g, (3.4445, -4.775, 2.0315), 5, 1e-7).float()
    singular = np.linalg.svd(o.numpy(), compute_uv=False)
    assert np.all((singular > 0.5) & (singular < 1.5))
    with pytest.raises(ValueError, match="2D parameters"):
        optim.Muon([ember.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="not supported"):
        optim.Muon([ember.zeros(3, 3, requires_grad=True)], adjust_lr_fn="bogus")


def _models():
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for (name, p) in theirs.state_dict().items():
            ours.state_dict()[name].copy_(ember.tensor(p.numpy()))
    return ours, theirs


def _perturb(ours, theirs, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p_e, p_t in zip(ours.parameters(), theirs.parameters()):
            delta = rng.standard_normal(tuple(p_t.shape)).astype(np.float32)
            p_t.add_(torch.tensor(delta))
            p_e.data = p_e.detach() + ember.tensor(delta)


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi", "swa_multi"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(kind, use_buffers):
    ours, theirs = _models()
    fns = {"swa": ({}, {}),
           "ema": ({"avg_fn": swa_utils.get_ema_avg_fn(0.9)}, {"avg_fn": torch.optim.swa_utils.get_ema_avg_fn(0.9)}),
           "ema_multi": ({"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.8)},
                         {"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.8)}),
           # torch's own multi SWA function fails on CPU with the long n_averaged (integer addcdiv), so ours
           # is checked against torch's default average, which it must equal
           "swa_multi": ({"multi_avg_fn": swa_utils.get_swa_multi_avg_fn()}, {})}[kind]
    avg_e = swa_utils.AveragedModel(ours, use_buffers=use_buffers, **fns[0])
    avg_t = torch.optim.swa_utils.AveragedModel(theirs, use_buffers=use_buffers, **fns[1])
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    for step in range(3):
        _perturb(ours, theirs, step)
        ours(ember.tensor(x)), theirs(torch.tensor(x))  # moves the BatchNorm buffers
        avg_e.update_parameters(ours)
        avg_t.update_parameters(theirs)
    state_e, state_t = avg_e.state_dict(), avg_t.state_dict()
    assert list(state_e) == list(state_t) and int(state_e["n_averaged"].item()) == 3
    for name in state_t:
        np.testing.assert_allclose(state_e[name].numpy(), state_t[name].numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    avg_e.eval(), avg_t.eval()
    np.testing.assert_allclose(avg_e(ember.tensor(x)).detach().numpy(), avg_t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_update_bn_recomputes_statistics_like_torch():
    ours, theirs = _models()
    batches = [np.random.default_rng(i).standard_normal((6, 3)).astype(np.float32) for i in range(3)]
    ours.eval(), theirs.eval()
    swa_utils.update_bn([(ember.tensor(b), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], theirs)
    assert not ours.training and ours[1].momentum == 0.1
    for name in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(ours.state_dict()[name].numpy(), theirs.state_dict()[name].numpy(), rtol=1e-5)


@pytest.mark.parametrize("strategy,epochs", [("cos", 3), ("linear", 4), ("cos", 0)])
def test_swalr_follows_torch(strategy, epochs):
    p_e, p_t = _pair((2, 2))
    opt_e, opt_t = optim.SGD([p_e], lr=0.5), torch.optim.SGD([p_t], lr=0.5)
    sched_e = swa_utils.SWALR(opt_e, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    sched_t = torch.optim.swa_utils.SWALR(opt_t, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    for _ in range(6):
        opt_e.step(), opt_t.step()
        sched_e.step(), sched_t.step()
        assert sched_e.get_last_lr() == pytest.approx(sched_t.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(opt_e, 0.1, anneal_strategy="step")


def test_swap_in_optimizer_params_and_state_steps_other_tensors_and_restores():
    def build(lib, make):
        live = make(np.ones((2, 2), np.float32))
        opt = lib.optim.Adam([live], lr=0.1)
        live.grad = make(np.full((2, 2), 0.5, np.float32))
        opt.step()
        other = make(np.zeros((2, 2), np.float32))
        other.grad = make(np.full((2, 2), -1.0, np.float32))
        saved = opt.state_dict()
        return live, opt, other, saved
    ember_run = build(ember, lambda v: ember.tensor(v, requires_grad=True))
    torch_run = build(torch, lambda v: torch.tensor(v, requires_grad=True))
    for lib, (live, opt, other, saved), swap in ((ember, ember_run, optim.swap_in_optimizer_params_and_state),
                                                 (torch, torch_run, torch.optim.swap_in_optimizer_params_and_state)):
        before = live.detach().clone()
        saved["param_groups"][0]["lr"] = 0.2
        with swap(opt, {"w": other}, saved):
            assert opt.param_groups[0]["params"][0] is other and opt.param_groups[0]["lr"] == 0.2
            opt.step()
        assert opt.param_groups[0]["params"][0] is live and opt.param_groups[0]["lr"] == 0.1
        assert np.array_equal(np.asarray(live.detach().numpy()), np.asarray(before.numpy()))
    np.testing.assert_allclose(ember_run[2].detach().numpy(), torch_run[2].detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ember_run[3]["state"][0]["exp_avg"].numpy(),
                               torch_run[3]["state"][0]["exp_avg"].numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="ordering"):
        with optim.swap_in_optimizer_params_and_state(ember_run[1], {}, ember_run[3]):
            pass
