"""Creation kernels. Values are converted C-style (wrapping integers), as PyTorch does."""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import NUMPY_DTYPE


def _full(size, value, dtype, device):
    target = NUMPY_DTYPE[dtype]
    try:
        fill = np.array(value, dtype=target)
    except (OverflowError, ValueError):
        fill = np.array(value).astype(target)
    return fill if size == () else np.full(size, fill, dtype=target)


def _arange(start, end, step, dtype, device):
    target = NUMPY_DTYPE[dtype]
    count = max(0, math.ceil((end - start) / step))
    if target.kind in "iub" and all(isinstance(v, int) for v in (start, end, step)):
        return np.arange(start, start + count * step, step, dtype=np.int64)[:count].astype(target, copy=False)
    return (start + np.arange(count, dtype=np.float64) * step).astype(target)


KERNELS = {
    "full": _full,
    "arange": _arange,
    "empty": lambda size, dtype, device: np.empty(size, dtype=NUMPY_DTYPE[dtype]),
}
