"""Random kernels drawing from a CpuGenerator (NumPy's Philox)."""
from __future__ import annotations

import numpy as np

from ..dtypes import NUMPY_DTYPE


def _sample_dtype(dtype):
    target = NUMPY_DTYPE[dtype]
    return target, (np.float64 if target == np.float64 else np.float32)


def _uniform(size, low, high, generator, dtype, device):
    target, draw = _sample_dtype(dtype)
    out = generator.numpy.random(size, dtype=draw)
    if low != 0.0 or high != 1.0:
        out = out * (high - low) + low
    out = out.astype(target, copy=False)
    # rounding (to half precision, or of low + u * (high - low)) can land on high itself: keep [low, high)
    below_high = np.nextafter(np.array(high, dtype=target), np.array(-np.inf, dtype=target))
    return np.minimum(out, below_high)


def _normal(size, mean, std, generator, dtype, device):
    target, draw = _sample_dtype(dtype)
    out = generator.numpy.standard_normal(size, dtype=draw)
    if mean != 0.0 or std != 1.0:
        out = out * std + mean
    return out.astype(target, copy=False)


def _integers(size, low, high, generator, dtype, device):
    return generator.numpy.integers(low, high, size, dtype=np.int64).astype(NUMPY_DTYPE[dtype], copy=False)


KERNELS = {"rand_uniform": _uniform, "rand_normal": _normal, "rand_int": _integers}
