"""Per-op overhead: small ops on tiny tensors, where dispatch cost dominates the arithmetic.

A 10-element add costs PyTorch about 2 µs, nearly all of it bookkeeping; Ember's issue-8 target
is to stay within 2× of that, with and without autograd recording. Run alone with

    python benchmarks/overhead.py [--quick] [--write FILE]     (same as run.py --only overhead)
"""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from harness import Case, Section, Timing
from sides import Lineup, Side

TIMING = {True: Timing(rounds=5, budget_s=0.01), False: Timing(rounds=21, budget_s=0.03)}


def _vector(side: Side, requires_grad: bool = False):
    return side.tensor(np.linspace(-1, 1, 10, dtype=np.float32), requires_grad)


def _matrix(side: Side):
    return side.tensor(np.random.default_rng(0).standard_normal((64, 64), dtype=np.float32))


def _chain_backward(side: Side):
    """Five recorded ops (mul, add, tanh, mul, sum) and the backward pass through them."""
    g = _vector(side, requires_grad=True)

    def step():
        ((g * 2 + 1).tanh() * g).sum().backward()
        g.grad = None
    return step


def _each(make: Callable[[Side], Callable[[], object]]):
    """A ``Case.build`` that makes the call independently for each side."""
    return lambda sides: ([make(side) for side in sides], "")


def _on(make_input, op):
    """A call that applies ``op`` to an input made for the side (made once, outside the timing)."""
    def make(side):
        x = make_input(side)
        return lambda: op(x)
    return make


def cases() -> list[Case]:
    vec, mat = _vector, _matrix
    grad_vec = lambda side: _vector(side, requires_grad=True)  # noqa: E731
    return [
        Case("add", "x + x (10 float32)", _each(_on(vec, lambda x: x + x)), target=2.0),
        Case("add_grad", "x + x, requires_grad (10 float32)", _each(_on(grad_vec, lambda x: x + x)), target=2.0),
        Case("mul_grad", "x * x, requires_grad (10 float32)", _each(_on(grad_vec, lambda x: x * x)), target=1.5),
        Case("chain_backward", "5-op chain + backward (10 float32)", _each(_chain_backward), target=1.5),
        Case("mul_scalar", "x * 2.0 (10 float32)", _each(_on(vec, lambda x: x * 2.0))),
        Case("exp", "x.exp() (10 float32)", _each(_on(vec, lambda x: x.exp()))),
        Case("sum", "x.sum() (10 float32)", _each(_on(vec, lambda x: x.sum())), target=2.0),
        Case("view", "x.view(2, 5) (10 float32)", _each(_on(vec, lambda x: x.view(2, 5))), target=2.0),
        Case("slice", "x[2:5] (10 float32)", _each(_on(vec, lambda x: x[2:5])), target=2.0),
        Case("matmul64", "m @ m (64×64 float32)", _each(_on(mat, lambda m: m @ m)), settle_s=0.15),  # BLAS threads
        Case("amax", "m.amax(dim=1) (64×64 float32)", _each(_on(mat, lambda m: m.amax(dim=1)))),
    ]


def section(lineup: Lineup, quick: bool) -> Section:
    return Section("overhead", "Per-op overhead", lineup.sides(), cases(), TIMING[quick],
                   note="Seconds per call; single-op cases run without autograd unless marked requires_grad.")


if __name__ == "__main__":
    from run import main
    main(["--only", "overhead", *sys.argv[1:]])
