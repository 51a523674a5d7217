"""The CPU's ``add_at`` (unbuffered ``a[key] += values``): a numba loop for whole rows picked by one integer
index array (an embedding's gradient, ``index_put_(..., accumulate=True)`` on dim 0), ``np.add.at`` otherwise.

Measured: 2048 rows of 48 floats into a (65, 48) table take 0.011 ms in the loop against 0.86 ms in
``np.add.at``. The loop compiles once per machine (numba's on-disk cache) and is imported on first use.
"""
from __future__ import annotations

import numpy as np

from . import fusion

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def add_at(a: np.ndarray, key, values) -> None:
    rows = key[0] if isinstance(key, tuple) and len(key) == 1 else None
    if (rows is not None and isinstance(rows, np.ndarray) and rows.dtype.kind in "iu" and a.ndim >= 1
            and isinstance(values, np.ndarray) and values.dtype == a.dtype and a.dtype in _FLOATS
            and values.shape == rows.shape + a.shape[1:] and a.flags.c_contiguous and rows.size
            and fusion.numba_available()):
        from .row_loops import add_rows
        width = int(np.prod(a.shape[1:], dtype=np.int64))
        flat_rows = np.ascontiguousarray(rows.reshape(-1))
        if flat_rows.min() >= -a.shape[0] and flat_rows.max() < a.shape[0]:  # else NumPy raises its IndexError
            add_rows(a.reshape(a.shape[0], width), flat_rows,
                     np.ascontiguousarray(values.reshape(flat_rows.size, width)))
            return
    np.add.at(a, key, values)
