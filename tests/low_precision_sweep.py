"""A seeded sweep of float16/bfloat16 ops on large-magnitude inputs, compared with PyTorch.

Values of magnitude 300..60000 make squares and sums overflow float16 unless the op accumulates in float32,
as PyTorch does. ``tests/test_low_precision.py`` runs a short sweep; ``python tests/low_precision_sweep.py``
runs 1,000 cases per op (500 per dtype) and prints the mismatches per op.
"""
from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import torch

import ember
import ember.nn.functional as EF
import torch.nn.functional as TF

DTYPES = ("float16", "bfloat16")
#: a result counts as matching within this many units in the last place of its dtype (PyTorch rounds once)
ULPS = 4
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _large(rng: np.random.Generator, shape) -> np.ndarray:
    """Signed values of magnitude 300..60000, log-uniform: squares overflow float16, sums often do too."""
    magnitude = np.exp(rng.uniform(math.log(300), math.log(60000), shape))
    return magnitude * rng.choice([-1.0, 1.0], shape)


def _positive(rng, shape):
    return np.abs(_large(rng, shape))


def _probabilities(rng, shape):
    return rng.uniform(0.01, 1.0, shape)


def _classes(rng, shape):
    return rng.integers(0, shape[-1], shape[:1])


#: op name -> (how many inputs, their makers, ember call, torch call). Each call takes the converted inputs.
CASES = {
    "sum": ((_large,), lambda x: x.sum(), lambda x: x.sum()),
    "sum_dim": ((_large,), lambda x: x.sum(-1), lambda x: x.sum(-1)),
    "mean": ((_large,), lambda x: x.mean(), lambda x: x.mean()),
    "mean_dim": ((_large,), lambda x: x.mean(-1), lambda x: x.mean(-1)),
    "var": ((_large,), lambda x: x.var(), lambda x: x.var()),
    "std": ((_large,), lambda x: x.std(), lambda x: x.std()),
    "std_dim": ((_large,), lambda x: x.std(-1), lambda x: x.std(-1)),
    "norm": ((_large,), lambda x: x.norm(), lambda x: x.norm()),
    "norm_dim": ((_large,), lambda x: x.norm(dim=-1), lambda x: x.norm(dim=-1)),
    "norm_p3": ((_large,), lambda x: x.norm(3), lambda x: x.norm(3)),
    "prod": ((_large,), lambda x: x.prod(-1), lambda x: x.prod(-1)),
    "cumsum": ((_large,), lambda x: x.cumsum(-1), lambda x: x.cumsum(-1)),
    "logsumexp": ((_large,), lambda x: x.logsumexp(-1), lambda x: x.logsumexp(-1)),
    "softmax": ((_large,), lambda x: x.softmax(-1), lambda x: x.softmax(-1)),
    "log_softmax": ((_large,), lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1)),
    "l1_loss": ((_large, _large), EF.l1_loss, TF.l1_loss),
    "l1_loss_sum": ((_large, _large), lambda x, t: EF.l1_loss(x, t, reduction="sum"),
                    lambda x, t: TF.l1_loss(x, t, reduction="sum")),
    "mse_loss": ((_large, _large), EF.mse_loss, TF.mse_loss),
    "huber_loss": ((_large, _large), EF.huber_loss, TF.huber_loss),
    "smooth_l1_loss": ((_large, _large), EF.smooth_l1_loss, TF.smooth_l1_loss),
    "kl_div": ((_large, _probabilities), EF.kl_div, TF.kl_div),
    "cross_entropy": ((_large, _classes), EF.cross_entropy, TF.cross_entropy),
    "normalize": ((_large,), EF.normalize, TF.normalize),
    "layer_norm": ((_large,), lambda x: EF.layer_norm(x, x.shape[-1:]), lambda x: TF.layer_norm(x, x.shape[-1:])),
    "group_norm": ((_large,), lambda x: EF.group_norm(x, 1), lambda x: TF.group_norm(x, 1)),
    "batch_norm": ((_large,), lambda x: EF.batch_norm(x, None, None, training=True),
                   lambda x: TF.batch_norm(x, None, None, training=True)),
    "lerp": ((_large, _large, _probabilities), ember.lerp, torch.lerp),
}


def _shape(rng: np.random.Generator) -> tuple:
    return (int(rng.integers(2, 6)), int(rng.integers(2, 65)))


def _as_ember(a: np.ndarray, dtype: str):
    if a.dtype.kind == "i":
        return ember.tensor(a)
    return ember.tensor(a.astype(np.float32)).to(getattr(ember, dtype))


def _as_torch(a: np.ndarray, dtype: str):
    if a.dtype.kind == "i":
        return torch.tensor(a)
    return torch.tensor(a.astype(np.float32)).to(getattr(torch, dtype))


def _values(t) -> np.ndarray:
    return t.double().numpy() if hasattr(t, "double") else t.float().numpy().astype(np.float64)


def mismatch(got, want, exact, dtype: str) -> str | None:
    """Why ember's ``got`` differs from torch's ``want``; None where they agree. ``exact`` is torch's answer in
    float64 on the same (rounded) inputs: a result at least as close to it as torch's counts as agreeing, and
    a finite result where torch overflows in an intermediate but the exact answer fits is reported apart, as
    "more accurate"."""
    if str(got.dtype).rpartition(".")[2] != str(want.dtype).rpartition(".")[2]:
        return f"dtype {got.dtype} vs {want.dtype}"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} vs {tuple(want.shape)}"
    with np.errstate(all="ignore"):
        return _compare(got, want, exact, dtype)


def _compare(got, want, exact, dtype: str) -> str | None:
    g, w = got.float().numpy().astype(np.float64), want.float().numpy().astype(np.float64)
    e = _values(exact.to(want.dtype))  # the exact answer rounded to the dtype
    tol = ULPS * EPS[dtype] * np.maximum(np.abs(e), np.abs(e[np.isfinite(e)]).max(initial=0) * EPS[dtype]) + 1e-30
    close = np.isclose(g, w, rtol=0, atol=0, equal_nan=True) | (np.abs(g - w) <= tol)
    as_good = np.abs(g - e) <= np.abs(w - e) + tol
    finite_where_torch_is_not = np.isfinite(g) & ~np.isfinite(w) & np.isfinite(e) & (np.abs(g - e) <= tol)
    bad = ~(close | as_good | finite_where_torch_is_not)
    if bad.any():
        if (~np.isfinite(g) & np.isfinite(w))[bad].any():
            return "inf/nan where torch has a finite value"
        if (np.isfinite(g) & ~np.isfinite(w))[bad].any():
            return "finite where torch has inf/nan"
        worst = np.max((np.abs(g - w) / tol)[bad]) * ULPS
        return f"off by {worst:.1f} ulp"
    if finite_where_torch_is_not.any():
        return "more accurate: finite where torch overflows in an intermediate"
    return None


def sweep(name: str, count: int, seed: int = 0) -> list[str]:
    """``count`` cases of op ``name`` per dtype; the reasons of the mismatches (and of the "more accurate")."""
    makers, ember_call, torch_call = CASES[name]
    rng = np.random.default_rng(seed)
    failures = []
    for dtype in DTYPES:
        for _ in range(count):
            shape = _shape(rng)
            arrays = [make(rng, shape) for make in makers]
            inputs = [_as_torch(a, dtype) for a in arrays]
            want = torch_call(*inputs)
            exact = torch_call(*(t.double() if t.is_floating_point() else t for t in inputs))
            try:
                got = ember_call(*(_as_ember(a, dtype) for a in arrays))
            except Exception as error:  # noqa: BLE001 - counted and reported, not hidden
                failures.append(f"{dtype}: {type(error).__name__}: {error}")
                continue
            reason = mismatch(got, want, exact, dtype)
            if reason is not None:
                failures.append(f"{dtype}: {reason}")
    return failures


def counts(failures: list[str]) -> tuple[int, int]:
    """(mismatches, results more accurate than torch's)."""
    better = sum("more accurate" in f for f in failures)
    return len(failures) - better, better


def main(count: int = 500) -> int:
    total = total_better = 0
    print(f"{'op':16s} {'mismatches':>10s} {'more accurate':>14s} of")
    for name in CASES:
        failures = sweep(name, count)
        bad, better = counts(failures)
        total, total_better = total + bad, total_better + better
        example = next((f for f in failures if "more accurate" not in f), None)
        print(f"{name:16s} {bad:10d} {better:14d} {2 * count}" + (f"  e.g. {example}" if example else ""))
    print(f"{'total':16s} {total:10d} {total_better:14d} {2 * count * len(CASES)}")
    return 0


if __name__ == "__main__":
    warnings.simplefilter("ignore", UserWarning)  # kl_div's notice about reduction='mean'
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
