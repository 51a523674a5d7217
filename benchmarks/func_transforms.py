"""Function transforms (``ember.func`` against ``torch.func``), the same code on both sides.

Per-sample gradients of an MLP (32 → 64 → 10, cross-entropy, batch 64): ``vmap(grad(loss))`` over the batch,
and, for comparison, a Python loop of one backward pass per example. Whole Jacobians of ``tanh(W x)`` by reverse
mode (``jacrev``: one VJP per output, batched) and forward mode (``jacfwd``: one JVP per input) for a wide
function (10 → 1000, where forward mode needs 10 products) and a tall one (1000 → 10, where reverse needs 10).
"""
from __future__ import annotations

import numpy as np

from harness import Case, Section, Timing
from sides import Lineup

BATCH, IN, HIDDEN, CLASSES = 64, 32, 64, 10
TIMING = {True: Timing(rounds=3, budget_s=0.1, settle_s=0.1), False: Timing(rounds=9, budget_s=0.3, settle_s=0.1)}


def _mlp_arrays():
    rng = np.random.default_rng(64)
    return {"0.weight": rng.standard_normal((HIDDEN, IN)).astype(np.float32) / IN ** 0.5,
            "0.bias": np.zeros(HIDDEN, np.float32),
            "2.weight": rng.standard_normal((CLASSES, HIDDEN)).astype(np.float32) / HIDDEN ** 0.5,
            "2.bias": np.zeros(CLASSES, np.float32)}, \
        rng.standard_normal((BATCH, IN)).astype(np.float32), rng.integers(0, CLASSES, BATCH)


def _model(side, arrays):
    nn = side.lib.nn
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    params = {name: side.tensor(value) for name, value in arrays.items()}
    return model, params


def _per_sample_vmap(sides):
    arrays, data, targets = _mlp_arrays()
    calls, outputs = [], []
    for side in sides:
        lib = side.lib
        model, params = _model(side, arrays)
        x, y = side.tensor(data), lib.tensor(targets, device=side.device)

        def loss(p, xi, yi, model=model, lib=lib):
            out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        per_sample = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
        calls.append(lambda per_sample=per_sample, params=params, x=x, y=y: per_sample(params, x, y))
        outputs.append(calls[-1]()["0.weight"].detach().cpu().numpy())
    same = all(np.allclose(o, outputs[0], rtol=1e-4, atol=1e-5) for o in outputs)
    return calls, "" if same else "per-sample gradients differ between sides"


def _per_sample_loop(sides):
    arrays, data, targets = _mlp_arrays()
    calls = []
    for side in sides:
        lib = side.lib
        model, params = _model(side, arrays)
        leaves = {k: v.clone().requires_grad_() for k, v in params.items()}
        x, y = side.tensor(data), lib.tensor(targets, device=side.device)

        def step(model=model, leaves=leaves, x=x, y=y, lib=lib):
            grads = []
            for i in range(BATCH):
                out = lib.func.functional_call(model, leaves, (x[i:i + 1],))
                grads.append(lib.autograd.grad(lib.nn.functional.cross_entropy(out, y[i:i + 1]),
                                               list(leaves.values())))
            return grads
        calls.append(step)
    return calls, ""


def _jacobian(mode: str, inputs: int, outputs: int):
    def build(sides):
        rng = np.random.default_rng(inputs * outputs)
        weight = rng.standard_normal((outputs, inputs)).astype(np.float32) / inputs ** 0.5
        point = rng.standard_normal(inputs).astype(np.float32)
        calls, results = [], []
        for side in sides:
            w, x = side.tensor(weight), side.tensor(point)
            jac = getattr(side.lib.func, mode)(lambda v, w=w: (w @ v).tanh())
            calls.append(lambda jac=jac, x=x: jac(x))
            results.append(calls[-1]().detach().cpu().numpy())
        same = all(np.allclose(r, results[0], rtol=1e-4, atol=1e-5) for r in results)
        return calls, "" if same else "Jacobians differ between sides"
    return build


def section(lineup: Lineup, quick: bool) -> Section | None:
    """Ember, and PyTorch where it is the reference (NumPy has no transforms)."""
    sides = [side for side in lineup.sides() if not side.is_numpy]
    cases = [Case("psg_vmap", f"per-sample grads, MLP {IN}-{HIDDEN}-{CLASSES}, batch {BATCH}: vmap(grad)",
                  _per_sample_vmap),
             Case("psg_loop", f"per-sample grads, same MLP: a loop of {BATCH} backward passes", _per_sample_loop),
             Case("jacrev_wide", "jacrev of tanh(W x), 10 → 1000", _jacobian("jacrev", 10, 1000)),
             Case("jacfwd_wide", "jacfwd of tanh(W x), 10 → 1000", _jacobian("jacfwd", 10, 1000)),
             Case("jacrev_tall", "jacrev of tanh(W x), 1000 → 10", _jacobian("jacrev", 1000, 10)),
             Case("jacfwd_tall", "jacfwd of tanh(W x), 1000 → 10", _jacobian("jacfwd", 1000, 10))]
    return Section("func", "Function transforms (torch.func)", sides, cases, TIMING[quick],
                   note="Each framework in its own processes; ratio = Ember time / PyTorch time.")
