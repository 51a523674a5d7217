"""Random kernels over a generator protocol, so that each library brings its own bit generator.

A generator passed to these kernels has ``uniform(size, dtype)`` (values in [0, 1) of float32 or
float64), ``normal(size, dtype)`` (standard normal values) and ``integers(low, high, size)`` (int64 in
[low, high)), each returning an array of the library's kind.
"""
from __future__ import annotations

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    dtypes = lib.dtypes

    def _sample_dtype(dtype):
        target = dtypes[dtype]
        return target, (np.float64 if target == np.float64 else np.float32)

    def _uniform(size, low, high, generator, dtype, device):
        target, draw = _sample_dtype(dtype)
        out = generator.uniform(size, draw)
        if low != 0.0 or high != 1.0:
            out = out * (high - low) + low
        out = out.astype(target, copy=False)
        # rounding (to half precision, or of low + u * (high - low)) can land on high itself: keep [low, high)
        below_high = np.nextafter(np.array(high, dtype=target), np.array(-np.inf, dtype=target))
        return xp.minimum(out, below_high[()])

    def _normal(size, mean, std, generator, dtype, device):
        target, draw = _sample_dtype(dtype)
        out = generator.normal(size, draw)
        if mean != 0.0 or std != 1.0:
            out = out * std + mean
        return out.astype(target, copy=False)

    def _integers(size, low, high, generator, dtype, device):
        return generator.integers(low, high, size).astype(dtypes[dtype], copy=False)

    below_one = np.nextafter(1.0, -np.inf)  # the largest float64 draw (rand_uniform's bound, as float64)

    def _draws(size, generator):
        """float64 draws in [0, 1): rand_uniform's, so this kernel and the op's composite agree for a seed."""
        return xp.minimum(generator.uniform(size, np.float64), below_one)

    def _multinomial(weights, num_samples, replacement, generator):
        """The multinomial op's composite in one kernel, with its numbers and its draws: a sampling loop calls it
        every step, where the composite's ten calls cost more than the arithmetic. Weights arrive checked."""
        weights = weights.astype(np.float64)
        if not replacement or num_samples == 1:  # the exponential race: the first to finish, in order
            with lib.quiet():  # a draw of exactly 0 finishes at once (w / 0 = inf)
                speed = xp.where(weights > 0, weights / -xp.log(1.0 - _draws(weights.shape, generator)), -1.0)
            if num_samples == 1:
                return xp.argmax(speed, -1)[..., None]
            reversed_order = lib.argsort_stable(speed[..., ::-1], -1)  # descending, ties in column order
            return (speed.shape[-1] - 1) - reversed_order[..., :-num_samples - 1:-1]
        rows = weights if weights.ndim == 2 else weights[None]
        cumulative = xp.cumsum(rows, -1)
        total = cumulative[:, -1:]
        draws = _draws((rows.shape[0], num_samples), generator) * total
        # the category whose cumulative weight first exceeds the draw (a tie takes the next one), but never past
        # the last category with weight: a draw rounded up to the total itself
        picks = xp.stack([xp.searchsorted(c, d, side="right") for c, d in zip(cumulative, draws)])
        picks = xp.minimum(picks, (cumulative < total).sum(-1, keepdims=True)).astype(np.int64, copy=False)
        return picks if weights.ndim == 2 else picks[0]

    return {"rand_uniform": _uniform, "rand_normal": _normal, "rand_int": _integers,
            "multinomial": _multinomial}  # an override of the composite
