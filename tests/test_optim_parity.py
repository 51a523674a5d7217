"""ember.optim against torch.optim over many steps: every optimizer and the options that change its math,
on a small float64 MLP trained through each framework's autograd, with a checkpoint round trip half-way;
LBFGS (with and without strong Wolfe) on a Rosenbrock function; PyTorch's implementation switches."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import optim

torch = pytest.importorskip("torch")

STEPS = 60
SHAPES = {"w1": (4, 5), "b1": (5,), "w2": (5, 2), "b2": (2,)}


@pytest.fixture(autouse=True)
def torch_float64_scalars():
    """torch keeps scalar state (NAdam's mu_product, ASGD's eta) in the default dtype; Ember in Python floats."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {name: rng.standard_normal(shape) * 0.5 for name, shape in SHAPES.items()}
    return params, rng.standard_normal((16, 4)), rng.standard_normal((16, 2))


def _mlp_loss(lib, p, x, y):
    hidden = lib.tanh(x @ p["w1"] + p["b1"])
    return ((hidden @ p["w2"] + p["b2"] - y) ** 2).mean()


class Run:
    """One framework's parameters, data and optimizer on the MLP problem."""

    def __init__(self, lib, make_optimizer, values, x, y):
        self.lib, self.make = lib, make_optimizer
        self.params = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in values.items()}
        self.x, self.y = lib.tensor(x, dtype=lib.float64), lib.tensor(y, dtype=lib.float64)
        self.opt = make_optimizer(list(self.params.values()))

    def step(self):
        self.opt.zero_grad()
        loss = _mlp_loss(self.lib, self.params, self.x, self.y)
        loss.backward()
        self.opt.step()
        return loss.item()


def _assert_params_match(ours: Run, theirs: Run, what: str, rtol=1e-9, atol=1e-12):
    for name in SHAPES:
        np.testing.assert_allclose(ours.params[name].detach().numpy(), theirs.params[name].detach().numpy(),
                                   rtol=rtol, atol=atol, err_msg=f"{what}: parameter {name}")


def _assert_state_matches(ours, theirs, what: str):
    """Same param-group hyperparameters and the same state entries with the same values."""
    sd_ours, sd_theirs = ours.state_dict(), theirs.state_dict()
    assert [set(g) for g in sd_ours["param_groups"]] == [set(g) for g in sd_theirs["param_groups"]], what
    assert sd_ours["state"].keys() == sd_theirs["state"].keys(), what
    for index, entries in sd_theirs["state"].items():
        assert sd_ours["state"][index].keys() == entries.keys(), f"{what}: state keys of parameter {index}"
        for key, value in entries.items():
            got = sd_ours["state"][index][key]
            if isinstance(value, torch.Tensor):
                got = got.numpy() if isinstance(got, ember.Tensor) else np.asarray(got)
                np.testing.assert_allclose(got, value.numpy(), rtol=1e-8, atol=1e-12, err_msg=f"{what}: {key}")


CASES = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.02, betas=(0.8, 0.99), maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, maximize=True, eps=1e-6)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.05)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=20, lambd=1e-2, alpha=0.5)),
    ("ASGD", dict(lr=0.05, t0=10, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.02, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, d=1.5, beta2_decay=-0.5)),
    ("Adafactor", dict(lr=0.05, eps=(1e-20, 1e-2), maximize=True)),
    ("Adam", dict(lr=0.01, fused=True)),
    ("Adam", dict(lr=0.01, foreach=True, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, fused=True, amsgrad=True)),
    ("AdamW", dict(lr=0.01, foreach=False, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=True)),
    ("SGD", dict(lr=0.01, momentum=0.5, dampening=0.1, maximize=True, fused=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, foreach=False)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, fused=True)),
]


def _case_id(case):
    name, kwargs = case
    return name + "(" + ",".join(f"{k}={v}" for k, v in kwargs.items()) + ")"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_many_steps_match_torch_with_a_checkpoint_half_way(case, tmp_path):
    name, kwargs = case
    values, x, y = _data()
    ours = Run(ember, lambda ps: getattr(optim, name)(ps, **kwargs), values, x, y)
    theirs = Run(torch, lambda ps: getattr(torch.optim, name)(ps, **kwargs), values, x, y)
    losses = []
    for step in range(1, STEPS + 1):
        losses.append(ours.step())
        theirs.step()
        _assert_params_match(ours, theirs, f"{name} step {step}")
        if step == STEPS // 2:
            _assert_state_matches(ours.opt, theirs.opt, f"{name} half-way")
            ember.save(ours.opt.state_dict(), tmp_path / "opt.ckpt")
            ours.opt = ours.make(list(ours.params.values()))  # a fresh optimizer resumes from the checkpoint
            ours.opt.load_state_dict(ember.load(tmp_path / "opt.ckpt"))
    _assert_state_matches(ours.opt, theirs.opt, f"{name} after {STEPS} steps")
    assert losses[-1] != losses[0]  # the run actually moved
    assert repr(ours.opt) == repr(theirs.opt).replace("torch.", "ember.")


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop",
                                  "RMSprop", "Adagrad", "Adafactor", "SparseAdam", "LBFGS"])
def test_defaults_and_param_group_keys_match_torch(name):
    ours = getattr(optim, name)([ember.zeros(3, requires_grad=True)])
    theirs = getattr(torch.optim, name)([torch.zeros(3, requires_grad=True)])
    assert ours.param_groups[0].keys() == theirs.param_groups[0].keys()
    for key, value in theirs.param_groups[0].items():
        if key != "params":
            assert ours.param_groups[0][key] == value, key


def test_every_torch_optimizer_except_muon_exists():
    missing = {n for n in torch.optim.__all__ if n[0].isupper() and not hasattr(optim, n)}
    assert missing <= {"Muon"}


# -- implementation switches ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(fused=True, differentiable=True), dict(fused=True, foreach=True)])
@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_fused_conflicts_raise_like_torch(name, kwargs):
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(RuntimeError, match="`fused`") as ours:
        getattr(optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name, kwargs, steps", [
    ("Adam", dict(lr=0.1), 2), ("Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1), 1),
    ("AdamW", dict(lr=0.1, maximize=True), 2), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), 2),
    ("SGD", dict(lr=0.1, weight_decay=0.1), 2), ("NAdam", dict(lr=0.1), 2),
    ("RAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True), 2), ("Adamax", dict(lr=0.1), 1),
    ("Adadelta", dict(weight_decay=0.1), 2), ("RMSprop", dict(momentum=0.5, centered=True), 1),
    ("Adagrad", dict(lr=0.1), 2), ("ASGD", dict(lr=0.1, t0=1), 2),
])
def test_differentiable_steps_backpropagate_like_torch(name, kwargs, steps):
    """With differentiable=True the update is part of the graph: d(loss after the steps) / d(initial values
    and first gradients) match torch's. (Some of torch's own updates cannot be differentiated over two
    steps, because they modify a saved tensor in place; those take one.)"""
    rng = np.random.default_rng(3)
    start, grads = rng.standard_normal((2, 3)), rng.standard_normal((steps, 2, 3))

    def run(lib, module):
        leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in start]
        grad_leaves = [[lib.tensor(g, dtype=lib.float64, requires_grad=True) for g in step] for step in grads]
        params = [leaf.clone() for leaf in leaves]  # non-leaf parameters, as differentiable runs use them
        opt = getattr(module, name)(params, differentiable=True, **kwargs)
        for step_grads in grad_leaves:
            for p, g in zip(params, step_grads):
                p.grad = g
            opt.step()
        sum((p * p).sum() for p in params).backward()
        return [p.detach().numpy() for p in params], [t.grad.numpy() for t in leaves + grad_leaves[0]]

    ours, theirs = run(ember, optim), run(torch, torch.optim)
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_non_differentiable_step_is_not_recorded_and_rejects_non_leaves():
    leaf = ember.ones(3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.Adam([leaf * 2])
    opt = optim.Adam([leaf], lr=0.1)
    leaf.grad = ember.ones(3, dtype=ember.float64)
    opt.step()
    assert leaf.grad_fn is None and opt.state[leaf]["exp_avg"].grad_fn is None


def test_fused_adam_runs_the_multi_tensor_op(monkeypatch):
    """fused=True (and the default) takes the _fused_adam_ op, foreach=False the per-parameter adam_step op (the
    backends' fused kernels where they have them); differentiable takes neither."""
    from ember.optim import adam as adam_module
    calls = []
    for name in ("adam_step", "_fused_adam_"):
        real = getattr(adam_module.F, name)
        monkeypatch.setattr(adam_module.F, name, lambda *a, _n=name, _r=real, **k: calls.append(_n) or _r(*a, **k))
    p = ember.ones(3, dtype=ember.float64, requires_grad=True)
    p.grad = ember.ones(3, dtype=ember.float64)
    optim.Adam([p], fused=True).step()
    assert calls == ["_fused_adam_"]
    optim.Adam([p], foreach=False).step()
    assert calls == ["_fused_adam_", "adam_step"]
    q = ember.ones(3, dtype=ember.float64, requires_grad=True).clone()
    q.grad = ember.ones(3, dtype=ember.float64)
    optim.Adam([q], differentiable=True).step()
    assert calls == ["_fused_adam_", "adam_step"] and q.grad_fn is not None


# -- SparseAdam ----------------------------------------------------------------------------------------------

def test_sparse_adam_refuses_dense_gradients_like_torch():
    theirs_p, ours_p = torch.zeros(3, requires_grad=True), ember.zeros(3, requires_grad=True)
    theirs, ours = torch.optim.SparseAdam([theirs_p]), optim.SparseAdam([ours_p])
    assert ours.state_dict() == {"state": {}, "param_groups": theirs.state_dict()["param_groups"]}
    calls = []
    theirs_p.grad, ours_p.grad = torch.ones(3), ember.ones(3)
    with pytest.raises(RuntimeError, match="does not support dense gradients") as expected:
        theirs.step(lambda: calls.append("torch"))
    with pytest.raises(RuntimeError, match="does not support dense gradients, please consider Adam instead"):
        ours.step(lambda: calls.append("ember"))
    assert calls == ["torch", "ember"]  # both evaluate the closure first
    assert str(expected.value).startswith("SparseAdam")
    ours_p.grad = None
    assert ours.step() is None  # nothing to update is fine
    for kwargs, message in [(dict(lr=0.0), "Invalid learning rate"), (dict(eps=0.0), "Invalid epsilon value"),
                            (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0")]:
        with pytest.raises(ValueError, match=message):
            torch.optim.SparseAdam([theirs_p], **kwargs)
        with pytest.raises(ValueError, match=message):
            optim.SparseAdam([ours_p], **kwargs)


# -- argument checks ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kwargs", [
    ("NAdam", dict(momentum_decay=-1)), ("NAdam", dict(betas=(0.9, 1.0))), ("RAdam", dict(eps=-1)),
    ("Adamax", dict(weight_decay=-1)), ("Adadelta", dict(rho=1.5)), ("ASGD", dict(lr=-1)),
    ("Rprop", dict(etas=(1.2, 0.5))), ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(d=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("LBFGS", dict(lr=-1)),
])
def test_invalid_hyperparameters_raise_torchs_value_error(name, kwargs):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


# -- LBFGS ---------------------------------------------------------------------------------------------------

def _rosenbrock(lib, parts):
    z = lib.cat([p.reshape(-1) for p in parts], 0)
    return (100 * (z[1:] - z[:-1] ** 2) ** 2 + (1 - z[:-1]) ** 2).sum()


LBFGS_CASES = [
    dict(line_search_fn="strong_wolfe"),
    dict(line_search_fn="strong_wolfe", history_size=3, max_iter=7),
    dict(lr=0.05, max_iter=10),
    dict(lr=0.2, history_size=4, max_iter=5, max_eval=6, tolerance_change=1e-6),
]


@pytest.mark.parametrize("kwargs", LBFGS_CASES, ids=[str(k) for k in LBFGS_CASES])
def test_lbfgs_on_rosenbrock_matches_torch(kwargs, tmp_path):
    start = [np.array([-1.2, 1.0]), np.array([[0.8, -0.5], [1.1, 0.3]])]

    def setup(lib, module):
        params = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in start]
        opt = module.LBFGS(params, **kwargs)

        def closure():
            opt.zero_grad()
            loss = _rosenbrock(lib, params)
            loss.backward()
            return loss
        return params, opt, closure

    ours_params, ours, ours_closure = setup(ember, optim)
    theirs_params, theirs, theirs_closure = setup(torch, torch.optim)
    initial = theirs_closure().item()
    for step in range(6):
        ours_loss, theirs_loss = ours.step(ours_closure), theirs.step(theirs_closure)
        assert isinstance(ours_loss, ember.Tensor)
        assert ours_loss.item() == pytest.approx(theirs_loss.item(), rel=1e-8, abs=1e-12)
        for a, b in zip(ours_params, theirs_params):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7, atol=1e-10,
                                       err_msg=f"LBFGS step {step}")
        ours_state, theirs_state = ours.state[ours_params[0]], theirs.state[theirs_params[0]]
        assert (ours_state["func_evals"], ours_state["n_iter"]) == (theirs_state["func_evals"], theirs_state["n_iter"])
        assert len(ours_state["old_dirs"]) == len(theirs_state["old_dirs"])
        if step == 2:  # resume from a checkpoint in a fresh optimizer
            ember.save(ours.state_dict(), tmp_path / "lbfgs.ckpt")
            ours = optim.LBFGS(ours_params, **kwargs)
            ours.load_state_dict(ember.load(tmp_path / "lbfgs.ckpt", weights_only=False))
    assert theirs_closure().item() < initial


def test_lbfgs_errors_like_torch():
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    opt = optim.LBFGS([p], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    assert optim.LBFGS([p], max_iter=8).param_groups[0]["max_eval"] == 10
