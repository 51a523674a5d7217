"""CSR @ dense (SpMM) for ``ember.sparse``: the OpenCL backend's sparse kernel (``../sparse.py``).

One work-item per output element (row i, column j): it walks row i's stored entries and adds
``values[p] * dense[col[p], j]``. Work-items of one row and neighbouring columns read neighbouring elements
of ``dense`` (one row of it per entry), so loads coalesce on a GPU and vectorize on PoCL; the row's
``crow``/``col``/``values`` reads are the same address across those work-items (broadcast).
"""
from __future__ import annotations

import numpy as np

from ..array import CLArray, empty
from ..cltypes import compute_ctype, load, store
from ._source import LONG, Params, cached


def _spmm_kernel(runtime, dtype: np.dtype):
    def build():
        p = Params().buffer("crow", LONG).buffer("col", LONG).buffer("values", dtype).buffer("dense", dtype)
        p.buffer("out", dtype, const=False).longs("crow_o", "col_o", "values_o", "dense_o", "k")
        acc = compute_ctype(dtype)
        source = f"""
__kernel void ember_csr_mm({p.text()})
{{
    const long j = get_global_id(0);
    const long i = get_global_id(1);
    EMBER_GUARD(j, k)
    const long start = crow[crow_o + i], end = crow[crow_o + i + 1];
    {acc} total = 0;
    for (long q = start; q < end; ++q)
        total += {load(dtype, "values", "values_o + q")} * {load(dtype, "dense", "dense_o + col[col_o + q] * k + j")};
    {store(dtype, "out", "i * k + j", "total")}
}}
"""
        return source, "ember_csr_mm", p.dtypes
    return cached(runtime, ("csr_mm", dtype), build)


def csr_matmul(crow: CLArray, col: CLArray, values: CLArray, dense: CLArray, rows: int) -> CLArray:
    """The (rows, k) product; operands contiguous (offsets allowed), indices int64."""
    k = dense.shape[1] if dense.ndim == 2 else 1
    out = empty(values.runtime, (rows, k), values.dtype)
    if out.size == 0:
        return out
    kernel = _spmm_kernel(values.runtime, values.dtype)
    values.runtime.launch_rows(kernel, k, rows, crow.buffer, col.buffer, values.buffer, dense.buffer, out.buffer,
                               crow.offset, col.offset, values.offset, dense.offset, k)
    return out
