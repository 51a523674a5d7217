"""Sorting on the device: a bitonic sort of each row's chunks in local memory, then merge passes in
global memory (each element finds its place in the merged run by a binary search in the other run).

Elements are ordered by (value, original position), a strict total order, so the result is the
stable sort whatever the network does: NaN counts as the largest value (after +inf ascending, first
descending), -0.0 equals 0.0, and equal values keep their original order in both directions.
"""
from __future__ import annotations

import math

import numpy as np

from .. import strided
from ..array import empty
from ..cltypes import compute_ctype, is_float, load, store
from ..strided import collapse
from ._source import LONG, Params, cached, dot, names, split
from .shapes import clone

_MAX_CHUNK = 2048  # elements one work-group sorts in local memory


def _before(ctype: str, floating: bool) -> str:
    """C function: whether (ka, pa) comes strictly before (kb, pb); positions >= lim are padding, last."""
    nan = """
    const int na = isnan(ka), nb = isnan(kb);
    if (na || nb) return (na && nb) ? pa < pb : (desc ? na : nb);""" if floating else ""
    return f"""
inline int before({ctype} ka, long pa, {ctype} kb, long pb, long lim, long desc)
{{
    if (pa >= lim || pb >= lim) return pa < pb;{nan}
    if (ka != kb) return desc ? ka > kb : ka < kb;
    return pa < pb;
}}
"""


def _block_kernel(runtime, dtype: np.dtype, rank: int):
    ctype = compute_ctype(dtype)

    def build():
        dims, coords = names("d", rank), names("i", rank)
        p = Params().buffer("a", dtype).longs("a_o", *names("a_s", rank), "a_step")
        p.buffer("vals", dtype, const=False).buffer("idx", LONG, const=False).longs(*names("o_s", rank), "o_step")
        p.longs("n", "chunk", "chunks", *dims, "desc").local("keys", ctype).local("pos", "int")
        source = _before(ctype, is_float(dtype)) + f"""
__kernel void ember_sort_block({p.text()})
{{
    const long grp = get_group_id(0);
    const long row = grp / chunks, first = (grp % chunks) * chunk;
    const int lid = get_local_id(0);
    const int G = get_local_size(0);
    {split("row", dims, coords, "r")}
    const long abase = {dot("a_o", coords, names("a_s", rank))};
    const long obase = {dot("0", coords, names("o_s", rank))};
    const long lim = min(n - first, chunk);
    for (long t = lid; t < chunk; t += G) {{
        if (t < lim) keys[t] = {load(dtype, "a", "abase + (first + t) * a_step")};
        pos[t] = (int)t;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long k = 2; k <= chunk; k <<= 1) {{
        for (long j = k >> 1; j > 0; j >>= 1) {{
            for (long t = lid; t < chunk / 2; t += G) {{
                const long i = (t / j) * 2 * j + (t % j), l = i + j;
                const {ctype} ki = keys[i], kl = keys[l];
                const int pi = pos[i], pl = pos[l];
                const int swap = ((i & k) == 0) ? before(kl, pl, ki, pi, lim, desc) : before(ki, pi, kl, pl, lim, desc);
                if (swap) {{ keys[i] = kl; keys[l] = ki; pos[i] = pl; pos[l] = pi; }}
            }}
            barrier(CLK_LOCAL_MEM_FENCE);
        }}
    }}
    for (long t = lid; t < lim; t += G) {{
        const long o = obase + (first + t) * o_step;
        {store(dtype, "vals", "o", "keys[t]")}
        idx[o] = first + pos[t];
    }}
}}
"""
        return source, "ember_sort_block", p.dtypes
    return cached(runtime, ("sort_block", dtype, rank), build)


def _merge_kernel(runtime, dtype: np.dtype, rank: int):
    ctype = compute_ctype(dtype)

    def build():
        dims, coords = names("d", rank), names("i", rank)
        p = Params().buffer("sv", dtype).buffer("si", LONG)
        p.buffer("dv", dtype, const=False).buffer("di", LONG, const=False)
        p.longs(*names("s", rank), "step", "n", "width", "total", *dims, "desc")
        source = _before(ctype, is_float(dtype)) + f"""
__kernel void ember_sort_merge({p.text()})
{{
    const long g = get_global_id(0);
    if (g >= total) return;
    const long row = g / n, j = g % n;
    {split("row", dims, coords, "r")}
    const long base = {dot("0", coords, names("s", rank))};
    const {ctype} key = {load(dtype, "sv", "base + j * step")};
    const long id = si[base + j * step];
    const long own = (j / width) * width, other = ((j / width) ^ 1) * width;
    long lo = 0, hi = other < n ? min(width, n - other) : 0;
    while (lo < hi) {{
        const long mid = (lo + hi) / 2, at = base + (other + mid) * step;
        if (before({load(dtype, "sv", "at")}, si[at], key, id, LONG_MAX, desc)) lo = mid + 1; else hi = mid;
    }}
    const long o = base + (min(own, other) + (j - own) + lo) * step;
    {store(dtype, "dv", "o", "key")}
    di[o] = id;
}}
"""
        return source, "ember_sort_merge", p.dtypes
    return cached(runtime, ("sort_merge", dtype, rank), build)


def _chunk(runtime, n: int, dtype: np.dtype) -> int:
    """The power of two >= n, capped by _MAX_CHUNK and by half the device's local memory."""
    per_element = _key_bytes(dtype) + 4
    cap = _MAX_CHUNK
    while cap > 2 and cap * per_element > runtime.local_bytes // 2:
        cap //= 2
    size = 1
    while size < min(n, cap):
        size *= 2
    return size


def _key_bytes(dtype: np.dtype) -> int:
    return 4 if dtype == np.float16 else dtype.itemsize


def _sort(a, dim, descending, stable):
    runtime = a.runtime
    if a.ndim == 0:
        return clone(a), strided.run(runtime, "x0", [strided.Scalar(0, LONG)], LONG, shape=())
    values, order = empty(runtime, a.shape, a.dtype), empty(runtime, a.shape, LONG)
    if a.size == 0:
        return values, order
    import pyopencl as cl
    dim %= a.ndim
    n = a.shape[dim]
    others = [d for d in range(a.ndim) if d != dim]
    rows = math.prod(a.shape[d] for d in others)
    shape, (sa, so) = collapse(tuple(a.shape[d] for d in others),
                               [tuple(a.strides[d] for d in others), tuple(values.strides[d] for d in others)])
    rank, step = len(shape), values.strides[dim]
    chunk = _chunk(runtime, n, a.dtype)
    chunks = -(-n // chunk)
    passes = math.ceil(math.log2(chunks)) if chunks > 1 else 0
    buffers = [(values, order), (empty(runtime, a.shape, a.dtype), empty(runtime, a.shape, LONG))] if passes \
        else [(values, order)]
    at = passes % 2  # the block sort writes where the last merge pass will read from, ending in values/order
    group = max(1, min(runtime.max_group, chunk // 2))
    desc = int(bool(descending))
    block = _block_kernel(runtime, a.dtype, rank)
    runtime.launch_groups(block, rows * chunks, group, a.buffer, a.offset, *sa, a.strides[dim],
                          buffers[at][0].buffer, buffers[at][1].buffer, *so, step, n, chunk, chunks, *shape, desc,
                          cl.LocalMemory(_key_bytes(a.dtype) * chunk), cl.LocalMemory(4 * chunk))
    if passes:
        merge = _merge_kernel(runtime, a.dtype, rank)
        width = chunk
        for _ in range(passes):
            (sv, si), (dv, di) = buffers[at], buffers[1 - at]
            runtime.launch(merge, rows * n, sv.buffer, si.buffer, dv.buffer, di.buffer, *so, step, n, width,
                           rows * n, *shape, desc)
            at, width = 1 - at, width * 2
    return values, order


def sort_1d(a):
    """(values, int64 positions) of a stable ascending sort of a 1-D array: for other kernels' use."""
    return _sort(a, 0, False, True)


KERNELS = {"sort": _sort}
