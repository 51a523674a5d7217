"""ember.optim against torch.optim: parameters and state after several steps on identical inputs, checkpoints,
param groups and errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ember
from ember import optim

SHAPES = [(4, 3), (3,), (2, 2, 2)]
STEPS = 8


def _initial(seed: int = 0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    return values, grads


def _ember_params(values, dtype=ember.float64):
    return [ember.tensor(v, dtype=dtype, requires_grad=True) for v in values]


def _torch_params(values):
    return [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]


def _set_grads(params, grads, make):
    for p, g in zip(params, grads):
        p.grad = None if g is None else make(g)


def _assert_close(ember_tensor, torch_tensor, rtol=1e-13, atol=1e-15):
    np.testing.assert_allclose(ember_tensor.detach().numpy(), torch_tensor.detach().numpy(), rtol=rtol, atol=atol)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.02, maximize=True, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.9), maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, eps=1e-4, maximize=True)),
    ("RMSprop", dict(lr=0.001, centered=True, weight_decay=0.01)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]


def _case_id(case):
    name, kwargs = case
    return name + "(" + ",".join(f"{k}={v}" for k, v in kwargs.items()) + ")"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_torch_step_by_step(case):
    name, kwargs = case
    values, grads = _initial()
    ours, theirs = _ember_params(values), _torch_params(values)
    ember_opt = getattr(optim, name)(ours, **kwargs)
    torch_opt = getattr(torch.optim, name)(theirs, **kwargs, foreach=False)
    for step_grads in grads:
        _set_grads(ours, step_grads, ember.tensor)
        _set_grads(theirs, step_grads, torch.tensor)
        ember_opt.step()
        torch_opt.step()
        for a, b in zip(ours, theirs):
            _assert_close(a, b)
    for a, b in zip(ours, theirs):
        ours_state, torch_state = ember_opt.state[a], torch_opt.state[b]
        assert set(ours_state) == {k for k, v in torch_state.items() if v is not None}
        for key, value in torch_state.items():
            if key == "step":
                assert ours_state["step"] == value.item() == STEPS
            elif value is not None:
                _assert_close(ours_state[key], value)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_float32_parameters_stay_float32_and_track_torch(name):
    values, grads = _initial(1)
    ours = _ember_params(values, ember.float32)
    theirs = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in values]
    kwargs = dict(lr=0.01, momentum=0.9) if name == "SGD" else dict(lr=0.01)
    ember_opt, torch_opt = getattr(optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step_grads in grads:
        _set_grads(ours, [g.astype(np.float32) for g in step_grads], ember.tensor)
        _set_grads(theirs, [g.astype(np.float32) for g in step_grads], torch.tensor)
        ember_opt.step()
        torch_opt.step()
    for a, b in zip(ours, theirs):
        assert a.dtype is ember.float32
        _assert_close(a, b, rtol=1e-5, atol=1e-6)
    for value in ember_opt.state[ours[0]].values():
        if isinstance(value, ember.Tensor):
            assert value.dtype is ember.float32


def test_parameters_without_grad_are_skipped_like_torch():
    values, grads = _initial(2)
    ours, theirs = _ember_params(values), _torch_params(values)
    ember_opt, torch_opt = optim.Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1, foreach=False)
    for i, step_grads in enumerate(grads):
        step_grads = [None if (j == 1 and i < 3) or j == 2 else g for j, g in enumerate(step_grads)]
        _set_grads(ours, step_grads, ember.tensor)
        _set_grads(theirs, step_grads, torch.tensor)
        ember_opt.step()
        torch_opt.step()
    for a, b in zip(ours, theirs):
        _assert_close(a, b)
    np.testing.assert_array_equal(ours[2].detach().numpy(), values[2])
    assert ours[2] not in ember_opt.state
    assert ember_opt.state[ours[1]]["step"] == STEPS - 3


def test_updates_parameters_in_place_without_recording():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.5, momentum=0.9)
    version = p._version[0]
    p.grad = ember.tensor([1.0, 1.0])
    opt.step()
    assert opt.param_groups[0]["params"][0] is p
    assert p.tolist() == [0.5, 1.5] and p.grad_fn is None and p.requires_grad
    assert p._version[0] > version
    assert opt.state[p]["momentum_buffer"] is not p.grad  # the buffer must not alias the gradient
    p.grad.zero_()
    assert opt.state[p]["momentum_buffer"].tolist() == [1.0, 1.0]


def test_param_groups_with_different_lrs_match_torch():
    values, grads = _initial(3)
    ours, theirs = _ember_params(values), _torch_params(values)

    def groups(ps):
        return [{"params": ps[:2]}, {"params": [ps[2]], "lr": 0.5, "momentum": 0.0}]
    ember_opt = optim.SGD(groups(ours), lr=0.1, momentum=0.9)
    torch_opt = torch.optim.SGD(groups(theirs), lr=0.1, momentum=0.9, foreach=False)
    assert ember_opt.param_groups[1]["lr"] == 0.5 and ember_opt.param_groups[0]["lr"] == 0.1
    assert ember_opt.param_groups[1]["nesterov"] is False  # filled from the defaults
    for step_grads in grads:
        _set_grads(ours, step_grads, ember.tensor)
        _set_grads(theirs, step_grads, torch.tensor)
        ember_opt.step()
        torch_opt.step()
    for a, b in zip(ours, theirs):
        _assert_close(a, b)
    assert "momentum_buffer" not in ember_opt.state[ours[2]]


def test_add_param_group_and_changing_lr_between_steps():
    values, grads = _initial(4)
    ours, theirs = _ember_params(values), _torch_params(values)
    ember_opt = optim.Adam(ours[:2], lr=0.01)
    torch_opt = torch.optim.Adam(theirs[:2], lr=0.01, foreach=False)
    for i, step_grads in enumerate(grads):
        if i == 3:
            ember_opt.add_param_group({"params": ours[2], "lr": 0.1, "betas": (0.5, 0.9)})
            torch_opt.add_param_group({"params": theirs[2], "lr": 0.1, "betas": (0.5, 0.9)})
            for group in ember_opt.param_groups + torch_opt.param_groups:
                group["lr"] *= 0.5
        _set_grads(ours, step_grads, ember.tensor)
        _set_grads(theirs, step_grads, torch.tensor)
        ember_opt.step()
        torch_opt.step()
    for a, b in zip(ours, theirs):
        _assert_close(a, b)
    assert ember_opt.param_groups[1]["eps"] == 1e-8


def _run(make_optimizer, params, grads):
    opt = make_optimizer(params)
    for step_grads in grads:
        _set_grads(params, step_grads, ember.tensor)
        opt.step()
    return opt


@pytest.mark.parametrize("case", [c for i, c in enumerate(CASES) if i % 3 == 1 or c[0] == "Adagrad"],
                         ids=lambda c: _case_id(c))
def test_state_dict_round_trip_continues_identically(case):
    name, kwargs = case
    values, grads = _initial(5)

    def make(ps):
        return getattr(optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.03}], **kwargs)

    uninterrupted = _ember_params(values)
    _run(make, uninterrupted, grads)

    first = _ember_params(values)
    opt = _run(make, first, grads[:4])
    saved = copy.deepcopy(opt.state_dict())
    resumed = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in first]  # new parameter objects
    fresh = make(resumed)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[1]["lr"] == 0.03 and fresh.param_groups[1]["params"][0] is resumed[1]
    for step_grads in grads[4:]:
        _set_grads(resumed, step_grads, ember.tensor)
        fresh.step()
    for a, b in zip(resumed, uninterrupted):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_state_dict_format_holds_indices_not_tensors():
    ps = _ember_params(_initial()[0])
    opt = optim.Adam([{"params": ps[:2]}, {"params": [ps[2]], "lr": 0.5}], amsgrad=True)
    for p in ps:
        p.grad = ember.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert set(sd["state"]) == {0, 1, 2}
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert not any(isinstance(v, ember.Tensor) for g in sd["param_groups"] for v in g.values())
    before = sd["state"][0]["exp_avg"].tolist()
    opt.step()
    # as in PyTorch, a state_dict references the state tensors, which the step updates in place
    assert sd["state"][0]["exp_avg"] is opt.state[ps[0]]["exp_avg"]
    assert sd["state"][0]["exp_avg"].tolist() != before
    assert sd["state"][0]["step"] == 1 and opt.state[ps[0]]["step"] == 2


def test_load_state_dict_casts_floating_state_to_the_parameter_dtype_and_copies():
    p64 = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    opt = optim.SGD([p64], lr=0.1, momentum=0.9)
    p64.grad = ember.tensor([0.5, 0.5], dtype=ember.float64)
    opt.step()
    sd = opt.state_dict()
    p32 = ember.tensor([1.0, 2.0], dtype=ember.float32, requires_grad=True)
    other = optim.SGD([p32], lr=0.1, momentum=0.9)
    other.load_state_dict(sd)
    buf = other.state[p32]["momentum_buffer"]
    assert buf.dtype is ember.float32 and buf.device == p32.device and buf.tolist() == [0.5, 0.5]
    assert buf is not sd["state"][0]["momentum_buffer"]


def test_load_state_dict_validates_groups():
    a, b, c = _ember_params(_initial()[0])
    opt = optim.SGD([{"params": [a, b]}, {"params": [c]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([a, b, c], lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([{"params": [a]}, {"params": [b, c]}], lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})


def test_adamw_keeps_decoupled_decay_after_loading_an_adam_checkpoint():
    p = ember.tensor([1.0], requires_grad=True)
    adam_sd = optim.Adam([p], weight_decay=0.1).state_dict()
    adamw = optim.AdamW([p])
    adamw.load_state_dict(adam_sd)
    assert adamw.param_groups[0]["decoupled_weight_decay"] is True
    assert adamw.param_groups[0]["weight_decay"] == 0.1


def test_zero_grad():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = ember.tensor([3.0, 4.0])
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_with_closure_returns_the_loss_and_records_inside_it():
    w = ember.tensor([3.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and w.tolist() == [1.5]  # w - 0.25 * 2w


def test_training_a_linear_model_through_autograd_reduces_the_loss():
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((64, 3)))
    y = x @ ember.tensor([[1.0], [-2.0], [0.5]])
    w = ember.zeros(3, 1, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = ((x @ w - y) * (x @ w - y)).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 * losses[0]


def test_repr_matches_torch_layout():
    p = ember.tensor([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [p], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                         "    fused: None\n    lr: 0.5\n    maximize: False\n    momentum: 0.9\n"
                         "    nesterov: False\n    weight_decay: 0\n)")
    theirs = torch.optim.SGD([{"params": [torch.zeros(1)], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert repr(opt) == repr(theirs)


@pytest.mark.parametrize("make, message", [
    (lambda ps: optim.SGD(ps, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda ps: optim.SGD(ps, momentum=-1), "Invalid momentum value: -1"),
    (lambda ps: optim.SGD(ps, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: optim.SGD(ps, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda ps: optim.SGD(ps, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    (lambda ps: optim.Adam(ps, lr=-1), "Invalid learning rate"),
    (lambda ps: optim.Adam(ps, eps=-1), "Invalid epsilon value: -1"),
    (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda ps: optim.AdamW(ps, weight_decay=-1), "Invalid weight_decay value"),
    (lambda ps: optim.RMSprop(ps, alpha=-1), "Invalid alpha value: -1"),
    (lambda ps: optim.RMSprop(ps, momentum=-1), "Invalid momentum value"),
    (lambda ps: optim.RMSprop(ps, eps=-1), "Invalid epsilon value"),
    (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda ps: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda ps: optim.SGD([{"params": ps[:1]}, {"params": ps}], lr=0.1), "more than one parameter group"),
    (lambda ps: optim.SGD([ps[0] * 2], lr=0.1), "non-leaf"),
])
def test_invalid_arguments_raise_value_error(make, message):
    ps = _ember_params(_initial()[0])
    with pytest.raises(ValueError, match=message):
        make(ps)


def test_invalid_param_containers_raise_type_error():
    p = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([p, 1.0], lr=0.1)
    with pytest.raises(TypeError, match="must be a dict"):
        optim.SGD([p], lr=0.1).add_param_group([p])


def test_required_hyperparameters_and_named_params():
    p, q = ember.tensor([1.0], requires_grad=True), ember.tensor([2.0], requires_grad=True)

    class Plain(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, dict(lr=lr))

    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Plain([p])
    with pytest.raises(NotImplementedError):
        Plain([p], lr=0.1).step()
    named = optim.SGD([("w", p), ("b", q)], lr=0.1)
    assert named.param_groups[0]["param_names"] == ["w", "b"]
    assert named.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


def test_duplicate_parameter_within_a_group_warns():
    p = ember.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)


@pytest.mark.skipif(not hasattr(ember, "save"), reason="ember.save is not available")
def test_state_dict_survives_ember_save_and_load(tmp_path):
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = ember.tensor([0.5, -0.5])
    opt.step()
    ember.save(opt.state_dict(), tmp_path / "optim.pt")
    q = ember.tensor(p.detach().numpy(), requires_grad=True)
    resumed = optim.Adam([q], lr=0.1)
    resumed.load_state_dict(ember.load(tmp_path / "optim.pt"))
    for ps, o in (([p], opt), ([q], resumed)):
        ps[0].grad = ember.tensor([0.25, 0.25])
        o.step()
    assert q.tolist() == p.tolist() and resumed.state[q]["step"] == 2
