"""matmul of complex matrices: one work-item per element of C, looping over k with the complex product
written out ((a + bi)(c + di) = (ac - bd) + (ad + bc)i), batched and broadcast over leading dims, operands
read through their strides. A plain kernel, not the tiled real GEMMs: complex products are rare enough in
Ember's workloads that a second pair of tilings would cost more code than it saves time.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import CLArray, empty
from ..cltypes import STORAGE_CTYPE
from ..strided import collapse
from ._source import Params, batch_walk, cached


def _kernel(runtime, dtype: np.dtype, batch_dims: int):
    def build():
        t = STORAGE_CTYPE[dtype]
        p = Params().buffer("A", dtype).longs("a_o", "a_sm", "a_sk").buffer("B", dtype).longs("b_o", "b_sk", "b_sn")
        p.buffer("C", dtype, const=False).longs("M", "N", "K")
        for d in range(batch_dims):
            p.longs(f"bd{d}", f"abs{d}", f"bbs{d}")
        source = f"""
__kernel void ember_gemm_complex({p.text()})
{{
    const long n = get_global_id(0), m = get_global_id(1), batch = get_global_id(2);
    if (n >= N || m >= M) return;
    long aoff = a_o, boff = b_o, q = batch;
    {batch_walk([("aoff", "abs"), ("boff", "bbs")], batch_dims)}
    {t} total = 0;
    for (long k = 0; k < K; ++k) {{
        const {t} a = A[aoff + m * a_sm + k * a_sk], b = B[boff + k * b_sk + n * b_sn];
        total.x += a.x * b.x - a.y * b.y;
        total.y += a.x * b.y + a.y * b.x;
    }}
    C[(batch * M + m) * N + n] = total;
}}
"""
        return source, "ember_gemm_complex", p.dtypes
    return cached(runtime, ("gemm_complex", dtype, batch_dims), build)


def matmul(a: CLArray, b: CLArray, batch: tuple, a_batch_strides: tuple, b_batch_strides: tuple) -> CLArray:
    """(*batch, M, K) @ (*batch, K, N) into a new contiguous (*batch, M, N)."""
    runtime = a.runtime
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    out = empty(runtime, batch + (M, N), a.dtype)
    if out.size:
        dims, (a_bs, b_bs) = collapse(batch, [a_batch_strides, b_batch_strides])
        args = [a.buffer, a.offset, a.strides[-2], a.strides[-1], b.buffer, b.offset, b.strides[-2],
                b.strides[-1], out.buffer, M, N, K]
        for d in range(len(dims)):
            args += [dims[d], a_bs[d], b_bs[d]]
        group = min(runtime.covering_group(N), 64)
        shape = (-(-N // group) * group, M, math.prod(batch))
        runtime.enqueue(_kernel(runtime, a.dtype, len(dims)), shape, (group, 1, 1), *args)
    return out
