"""Creation kernels. Values are converted C-style (wrapping integers), as PyTorch does.

Fill values are converted on the host with NumPy, so the wrapping rules are NumPy's on every library.
"""
from __future__ import annotations

import math

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    dtypes = lib.dtypes
    on_host = xp is np

    def _full(size, value, dtype, device):
        target = dtypes[dtype]
        try:
            fill = np.array(value, dtype=target)
        except (OverflowError, ValueError):
            fill = np.array(value).astype(target)
        if size == () and on_host:
            return fill
        return xp.full(size, fill[()], dtype=target)

    def _arange(start, end, step, dtype, device):
        target = dtypes[dtype]
        count = max(0, math.ceil((end - start) / step))
        if target.kind in "iub" and all(isinstance(v, int) for v in (start, end, step)):
            return xp.arange(start, start + count * step, step, dtype=np.int64)[:count].astype(target, copy=False)
        return (start + xp.arange(count, dtype=np.float64) * step).astype(target)

    return {
        "full": _full,
        "arange": _arange,
        "empty": lambda size, dtype, device: xp.empty(size, dtype=dtypes[dtype]),
        # overrides of the composites (full with 0 or 1): one dispatch, not two, where datasets make rows of zeros
        "zeros": lambda size, dtype, device: xp.zeros(size, dtype=dtypes[dtype]),
        "ones": lambda size, dtype, device: xp.ones(size, dtype=dtypes[dtype]),
    }
