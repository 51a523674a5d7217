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

    return {"rand_uniform": _uniform, "rand_normal": _normal, "rand_int": _integers}
