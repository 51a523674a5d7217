"""LBFGS against PyTorch's, step by step, on a small float64 MLP: the same parameters, losses, counters and
curvature pairs after every step (to 1e-10), with and without the strong-Wolfe line search, across a
checkpoint; and its search direction op (``_lbfgs_direction``) against PyTorch's two-loop recursion."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import optim
from ember.dispatch.ops import F
from ember.dispatch.ops.training.lbfgs import _two_loop
from ember.dispatch.schema.errors import ArgumentError, DtypeError, ShapeError

torch = pytest.importorskip("torch")

TOLERANCE = dict(rtol=1e-10, atol=1e-10)
#: for the state: y (a change of gradient), and through ro = 1 / y.s the direction and steps, come from
#: differences of nearly equal gradients, in which the frameworks' last-bit differences (sin, pow, their dot
#: products' summation orders) grow to relative differences of about 1e-10 near convergence
STATE_TOLERANCE = dict(rtol=1e-8, atol=1e-10)


def _separable_problem(lib, optimizer_class, **options):
    """A smooth non-quadratic loss, elementwise in four parameters of an MLP's shapes: both frameworks compute
    its gradient bit for bit alike, so any difference comes from the optimizers."""
    rng = np.random.default_rng(7)
    shapes = [(3, 8), (8,), (8, 1), (1,)]
    params = [lib.tensor(rng.standard_normal(s), dtype=lib.float64, requires_grad=True) for s in shapes]
    scales = [lib.tensor(rng.uniform(0.5, 4.0, s), dtype=lib.float64) for s in shapes]
    opt = optimizer_class(params, **options)

    def closure():
        opt.zero_grad()
        loss = 0
        for p, c in zip(params, scales):
            loss = loss + (c * (p - 0.3) ** 2 + 0.1 * p ** 4 + lib.cos(2 * p)).sum()
        loss.backward()
        return loss
    return params, opt, closure


def _mlp_problem(lib, optimizer_class, **options):
    """A 3-8-1 tanh MLP fitted to 20 points of a sine: parameters, optimizer and closure. The frameworks'
    matrix products round differently (about 1e-16), which a non-convex fit amplifies over many iterations
    (1e-8 after a hundred, as before Ember's fused direction op): a few iterations keep it below 1e-10."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (20, 3))
    y = np.sin(x.sum(1, keepdims=True))
    start = [rng.standard_normal((3, 8)) * 0.5, np.zeros(8), rng.standard_normal((8, 1)) * 0.5, np.zeros(1)]
    params = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in start]
    X, Y = lib.tensor(x, dtype=lib.float64), lib.tensor(y, dtype=lib.float64)
    opt = optimizer_class(params, **options)

    def closure():
        opt.zero_grad()
        w1, b1, w2, b2 = params
        loss = ((lib.tanh(X @ w1 + b1) @ w2 + b2 - Y) ** 2).mean()
        loss.backward()
        return loss
    return params, opt, closure


def _assert_same_state(ours, theirs, step):
    ours_state = ours.state[ours.param_groups[0]["params"][0]]
    theirs_state = theirs.state[theirs.param_groups[0]["params"][0]]
    for key in ("func_evals", "n_iter"):
        assert ours_state[key] == theirs_state[key], f"{key} after step {step}"
    assert len(ours_state["old_dirs"]) == len(theirs_state["old_dirs"]), f"history length after step {step}"
    np.testing.assert_allclose(ours_state["prev_loss"], float(theirs_state["prev_loss"]), **TOLERANCE)
    np.testing.assert_allclose(ours_state["prev_flat_grad"].numpy(), theirs_state["prev_flat_grad"].numpy(),
                               **TOLERANCE, err_msg=f"prev_flat_grad after step {step}")
    for key in ("t", "H_diag"):
        np.testing.assert_allclose(float(ours_state[key]), float(theirs_state[key]), **STATE_TOLERANCE,
                                   err_msg=f"{key} after step {step}")
    np.testing.assert_allclose([float(r) for r in ours_state["ro"]], [float(r) for r in theirs_state["ro"]],
                               **STATE_TOLERANCE, err_msg=f"ro after step {step}")
    np.testing.assert_allclose(ours_state["d"].numpy(), theirs_state["d"].numpy(), **STATE_TOLERANCE,
                               err_msg=f"d after step {step}")
    ours_pairs = ours_state["old_dirs"] + ours_state["old_stps"]
    for a, b in zip(ours_pairs, theirs_state["old_dirs"] + theirs_state["old_stps"]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **STATE_TOLERANCE, err_msg=f"pairs after step {step}")


CASES = [
    ("separable", dict(lr=0.8)),
    ("separable", dict(lr=0.8, line_search_fn="strong_wolfe")),
    ("separable", dict(lr=1, line_search_fn="strong_wolfe", history_size=3, max_iter=9)),  # old pairs dropped
    ("separable", dict(lr=0.5, history_size=2, max_iter=6, max_eval=7)),
    ("mlp", dict(lr=0.8, max_iter=4)),
    ("mlp", dict(lr=1, line_search_fn="strong_wolfe", max_iter=4)),
]
PROBLEMS = {"separable": _separable_problem, "mlp": _mlp_problem}


@pytest.mark.parametrize("problem, options", CASES, ids=[f"{p}-{o}" for p, o in CASES])
def test_lbfgs_matches_torch_step_by_step(problem, options, tmp_path):
    make = PROBLEMS[problem]
    ours_params, ours, ours_closure = make(ember, optim.LBFGS, **options)
    theirs_params, theirs, theirs_closure = make(torch, torch.optim.LBFGS, **options)
    first = theirs_closure().item()
    for step in range(4):
        ours_loss, theirs_loss = ours.step(ours_closure), theirs.step(theirs_closure)
        np.testing.assert_allclose(ours_loss.item(), theirs_loss.item(), **TOLERANCE, err_msg=f"loss at step {step}")
        for a, b in zip(ours_params, theirs_params):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOLERANCE,
                                       err_msg=f"parameters after step {step}")
        _assert_same_state(ours, theirs, step)
        if step == 1:  # continue from a checkpoint, in a new optimizer
            ember.save(ours.state_dict(), tmp_path / "lbfgs.pt")
            ours = optim.LBFGS(ours_params, **options)
            ours.load_state_dict(ember.load(tmp_path / "lbfgs.pt", weights_only=False))
    assert theirs_closure().item() < first


def test_lbfgs_stops_at_once_where_the_gradient_is_below_tolerance_grad():
    params, opt, closure = _separable_problem(ember, optim.LBFGS, tolerance_grad=1e3)
    before = [p.detach().clone() for p in params]
    opt.step(closure)
    state = opt.state[params[0]]
    assert (state["func_evals"], state["n_iter"]) == (1, 0)
    assert all(ember.equal(a, b.detach()) for a, b in zip(before, params))


def _pairs(dtype, n=40, m=6, seed=3):
    rng = np.random.default_rng(seed)
    steps = [rng.standard_normal(n) for _ in range(m)]
    dirs = [s + 0.2 * rng.standard_normal(n) for s in steps]
    ro = [1.0 / float(y @ s) for y, s in zip(dirs, steps)]
    return rng.standard_normal(n).astype(dtype), [y.astype(dtype) for y in dirs], [s.astype(dtype) for s in steps], ro


def _torch_two_loop(grad, dirs, stps, ro, H_diag):
    """PyTorch's LBFGS two-loop recursion, as its step writes it."""
    dirs, stps = [torch.tensor(y) for y in dirs], [torch.tensor(s) for s in stps]
    q = torch.tensor(grad).neg()
    al = [None] * len(dirs)
    for i in range(len(dirs) - 1, -1, -1):
        al[i] = stps[i].dot(q) * ro[i]
        q.add_(dirs[i], alpha=-al[i])
    r = torch.mul(q, H_diag)
    for i in range(len(dirs)):
        be_i = dirs[i].dot(r) * ro[i]
        r.add_(stps[i], alpha=al[i] - be_i)
    return r.numpy()


def test_direction_op_matches_torchs_two_loop_recursion():
    grad, dirs, stps, ro = _pairs(np.float64)
    expected = _torch_two_loop(grad, dirs, stps, ro, 0.7)
    args = (ember.tensor(grad), [ember.tensor(y) for y in dirs], [ember.tensor(s) for s in stps], ro, 0.7)
    np.testing.assert_allclose(F._lbfgs_direction(*args).numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_two_loop(*args).numpy(), expected, rtol=1e-12, atol=1e-12)  # the composite


def test_direction_op_in_float32_and_on_strided_vectors():
    grad, dirs, stps, ro = _pairs(np.float32)
    expected = _torch_two_loop(grad.astype(np.float64), [y.astype(np.float64) for y in dirs],
                               [s.astype(np.float64) for s in stps], ro, 0.7)
    ours = F._lbfgs_direction(ember.tensor(grad), [ember.tensor(y) for y in dirs], [ember.tensor(s) for s in stps],
                              ro, 0.7)
    assert ours.dtype is ember.float32
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-4, atol=1e-4)
    strided = [ember.tensor(np.stack([y, y], 1))[:, 1] for y in dirs]
    assert not strided[0].is_contiguous()
    again = F._lbfgs_direction(ember.tensor(grad), strided, [ember.tensor(s) for s in stps], ro, 0.7)
    np.testing.assert_array_equal(again.numpy(), ours.numpy())


def test_direction_op_rejects_bad_pairs_naming_itself():
    grad = ember.zeros(4, dtype=ember.float64)
    pair = [ember.zeros(4, dtype=ember.float64)]
    with pytest.raises(ShapeError, match="_lbfgs_direction.*gradient's shape"):
        F._lbfgs_direction(grad, [ember.zeros(5, dtype=ember.float64)], pair, [1.0], 1.0)
    with pytest.raises(ShapeError, match="_lbfgs_direction.*one ro per pair"):
        F._lbfgs_direction(grad, pair, pair, [1.0, 2.0], 1.0)
    with pytest.raises(DtypeError, match="_lbfgs_direction.*gradient's dtype"):
        F._lbfgs_direction(grad, [ember.zeros(4)], pair, [1.0], 1.0)
    with pytest.raises(ArgumentError, match="_lbfgs_direction: ro must be a list of numbers"):
        F._lbfgs_direction(grad, pair, pair, ["a"], 1.0)
