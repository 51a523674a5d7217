"""The numba loop of the CPU's topk over the rows of a C-contiguous (rows, n) array.

Imported on the first call of ``topk_kernels``' kernel, never with ember (importing numba takes a while);
``cache=True``: later processes load the machine code instead of compiling it.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def _ahead(a, b, largest) -> bool:
    """Whether value ``a`` comes strictly before ``b`` in topk's order: NaN counts as the largest value, and
    equal values keep their order (so the earlier column stays ahead)."""
    if largest:
        return (a != a and b == b) or a > b
    return (b != b and a == a) or a < b


@njit(cache=True)
def topk_rows(rows, k, largest, values, columns):
    """Each row's k first values in a stable sort's order, and their columns, into ``values`` and ``columns``
    ((rows, k) arrays): one pass over the row keeping the k best by insertion. Most values lose to the k-th
    kept one at the first comparison, so a pass costs about one comparison a value for k much below n."""
    count, n = rows.shape
    for r in range(count):
        kept = 0
        for j in range(n):
            v = rows[r, j]
            at = kept  # where v goes among the kept ones: after every one it does not come before
            while at > 0 and _ahead(v, values[r, at - 1], largest):
                at -= 1
            if at < k:
                for q in range(min(kept, k - 1), at, -1):
                    values[r, q] = values[r, q - 1]
                    columns[r, q] = columns[r, q - 1]
                values[r, at] = v
                columns[r, at] = j
                if kept < k:
                    kept += 1
