"""The CPU's topk as a numba loop where numba is installed, for k up to ``MOST_KEPT``: a sampling loop's top-k of
the next token's logits (batch 1 to 64, a vocabulary of 65) spent its time in a dozen NumPy calls a step, and
the shared kernel's sort of whole rows cost more than the selection itself. Other calls (larger k, types the
loop does not take, no numba) run the shared NumPy kernel; both give the stable order (ties by column, NaN as
the largest value).
"""
from __future__ import annotations

import numpy as np

from . import fusion
from .dtypes import LOW_PRECISION

#: The loop keeps k values a row by insertion: O(n k) at worst, so larger k go to the shared kernel's sort.
MOST_KEPT = 32
_LOOP_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8))

_topk_loops = fusion.imported_on_first_call("topk_loops")


def build(kernels: dict) -> dict:
    """``topk`` with the loop, falling back to ``kernels["topk"]``; nothing where numba is not installed."""
    if not fusion.numba_available():
        return {}
    shared = kernels["topk"]

    def topk(a, k, dim, largest, sorted):
        if a.ndim == 0 or not 0 < k <= MOST_KEPT or (a.dtype not in _LOOP_DTYPES and a.dtype not in LOW_PRECISION):
            return shared(a, k, dim, largest, sorted)
        last = dim == a.ndim - 1
        moved = a if last else np.moveaxis(a, dim, -1)
        n = moved.shape[-1]
        rows = np.ascontiguousarray(moved.reshape(-1, n))
        if rows.dtype in LOW_PRECISION:  # numba has no half types: select in float32 (exact), values as given
            wide = rows.astype(np.float32)
            values = np.empty((rows.shape[0], k), np.float32)
            columns = np.empty((rows.shape[0], k), np.int64)
            _topk_loops().topk_rows(wide, k, largest, values, columns)
            values = values.astype(rows.dtype)
        else:
            values = np.empty((rows.shape[0], k), rows.dtype)
            columns = np.empty((rows.shape[0], k), np.int64)
            _topk_loops().topk_rows(rows, k, largest, values, columns)
        kept = moved.shape[:-1] + (k,)
        values, columns = values.reshape(kept), columns.reshape(kept)
        if last:
            return values, columns
        return np.moveaxis(values, -1, dim).copy(), np.moveaxis(columns, -1, dim).copy()

    return {"topk": topk}
