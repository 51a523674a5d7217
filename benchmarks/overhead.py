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


def _slice_assignment(side: Side):
    """makemore's dataset row: ``x[1:1 + n] = ix`` into a fresh int64 row."""
    row, word = side.tensor(np.zeros(17, np.int64)), side.tensor(np.arange(1, 6, dtype=np.int64))

    def step():
        row[1:6] = word
    return step


def _logits(side: Side, batch: int = 1):
    """A sampler's next-token logits (vocabulary 65) and their softmax."""
    logits = side.tensor(np.random.default_rng(1).standard_normal((batch, 65), dtype=np.float32))
    return logits, side.lib.nn.functional.softmax(logits, dim=-1)


def _top_k_mask(side: Side):
    """minGPT's top-k mask: ``logits[logits < v[:, [-1]]] = -inf`` (v: the top 10)."""
    logits, _ = _logits(side)
    v, _ = side.lib.topk(logits, 10)

    def step():
        logits[logits < v[:, [-1]]] = -float("inf")
    return step


def _token_cat(side: Side):
    """The sampled token appended: ``torch.cat((idx, idx_next), dim=1)``."""
    idx, token = side.tensor(np.zeros((1, 40), np.int64)), side.tensor(np.ones((1, 1), np.int64))

    def step():
        return side.lib.cat((idx, token), dim=1)
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
        Case("setitem_slice", "x[1:6] = ix (17 int64, makemore's dataset)", _each(_slice_assignment)),
        Case("last_logits", "logits[:, -1, :] / 0.8 (1×8×65 float32)",
             _each(_on(lambda side: side.tensor(np.ones((1, 8, 65), np.float32)), lambda x: x[:, -1, :] / 0.8))),
        Case("topk", "topk(logits, 10) (1×65 float32)",
             _each(_on(lambda side: _logits(side)[0], lambda x: x.topk(10)))),
        Case("top_k_mask", "logits[logits < v[:, [-1]]] = -inf (1×65 float32)", _each(_top_k_mask)),
        Case("multinomial", "multinomial(probs, 1) (1×65 float32)",
             _each(_on(lambda side: _logits(side)[1], lambda p: p.multinomial(1)))),
        Case("cat_token", "cat((idx, next), 1) (1×40 and 1×1 int64)", _each(_token_cat)),
        Case("matmul64", "m @ m (64×64 float32)", _each(_on(mat, lambda m: m @ m)), settle_s=0.15),  # BLAS threads
        Case("amax", "m.amax(dim=1) (64×64 float32)", _each(_on(mat, lambda m: m.amax(dim=1)))),
    ]


def section(lineup: Lineup, quick: bool) -> Section:
    return Section("overhead", "Per-op overhead", lineup.sides(), cases(), TIMING[quick],
                   note="Seconds per call; single-op cases run without autograd unless marked requires_grad.")


if __name__ == "__main__":
    from run import main
    main(["--only", "overhead", *sys.argv[1:]])
