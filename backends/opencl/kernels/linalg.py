"""matmul as a tiled GEMM, batched and broadcast over leading dims; inputs are read through their
strides, so transposed operands need no copy. Two tilings of the same product:

- GPUs (and other non-CPU devices): each work-group computes a 64x64 tile of C; each of its 16x16
  work-items accumulates a 4x4 block in registers from 16-deep slices of A and B staged in local memory.
- CPU devices (PoCL): register-blocked micro-kernels over a packed B, in ``gemm_cpu``.

Complex matrices take a plain kernel of their own on every device (``gemm_complex``).
"""
from __future__ import annotations

import math

import numpy as np

from ..array import CLArray, contiguous_strides, empty
from ..cltypes import STORAGE_CTYPE, compute_ctype, load, store
from ..strided import broadcast_strides, collapse
from ._source import batch_walk
from . import gemm_complex, gemm_cpu

TILE, DEPTH, WORK, SIDE = 64, 16, 4, 16  # C tile, K slice, outputs per work-item per axis, work-items per axis
_KERNELS: dict = {}


def _accumulator(dtype: np.dtype) -> str:
    return "int" if dtype == np.bool_ else compute_ctype(dtype)


def _kernel(runtime, dtype: np.dtype, batch_dims: int):
    key = (runtime.index, dtype, batch_dims)
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    t, acc = STORAGE_CTYPE[dtype], _accumulator(dtype)
    batch_params = "".join(f", const long bd{d}, const long abs{d}, const long bbs{d}" for d in range(batch_dims))
    walk = batch_walk([("aoff", "abs"), ("boff", "bbs")], batch_dims)
    per_item = TILE * DEPTH // (SIDE * SIDE)
    source = f"""
__kernel __attribute__((reqd_work_group_size({SIDE}, {SIDE}, 1)))
void ember_gemm(__global const {t} *A, const long a_o, const long a_sm, const long a_sk,
                __global const {t} *B, const long b_o, const long b_sk, const long b_sn,
                __global {t} *C, const long M, const long N, const long K{batch_params})
{{
    const int tx = get_local_id(0), ty = get_local_id(1), flat = ty * {SIDE} + tx;
    const long n0 = (long)get_group_id(0) * {TILE}, m0 = (long)get_group_id(1) * {TILE};
    const long batch = get_global_id(2);
    long aoff = a_o, boff = b_o, q = batch;
    {walk}
    const long coff = batch * M * N;
    __local {acc} As[{DEPTH}][{TILE}];
    __local {acc} Bs[{DEPTH}][{TILE}];
    {acc} sum[{WORK}][{WORK}];
    for (int i = 0; i < {WORK}; ++i) for (int j = 0; j < {WORK}; ++j) sum[i][j] = 0;
    for (long k0 = 0; k0 < K; k0 += {DEPTH}) {{
        for (int l = 0; l < {per_item}; ++l) {{
            const int e = flat + l * {SIDE * SIDE};
            const int mm = e / {DEPTH}, ka = e % {DEPTH};
            const long m = m0 + mm, ka_ = k0 + ka;
            As[ka][mm] = (m < M && ka_ < K) ? ({acc}){load(dtype, "A", "aoff + m * a_sm + ka_ * a_sk")} : 0;
            const int kb = e / {TILE}, nn = e % {TILE};
            const long n = n0 + nn, kb_ = k0 + kb;
            Bs[kb][nn] = (n < N && kb_ < K) ? ({acc}){load(dtype, "B", "boff + kb_ * b_sk + n * b_sn")} : 0;
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < {DEPTH}; ++k) {{
            {acc} a[{WORK}], b[{WORK}];
            for (int i = 0; i < {WORK}; ++i) a[i] = As[k][ty + i * {SIDE}];
            for (int j = 0; j < {WORK}; ++j) b[j] = Bs[k][tx + j * {SIDE}];
            for (int i = 0; i < {WORK}; ++i) for (int j = 0; j < {WORK}; ++j) sum[i][j] += a[i] * b[j];
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    for (int i = 0; i < {WORK}; ++i) {{
        const long m = m0 + ty + i * {SIDE};
        for (int j = 0; j < {WORK}; ++j) {{
            const long n = n0 + tx + j * {SIDE};
            if (m < M && n < N) {{ {store(dtype, "C", "coff + m * N + n", "sum[i][j]")} }}
        }}
    }}
}}
"""
    scalar_dtypes = [None, np.int64, np.int64, np.int64, None, np.int64, np.int64, np.int64, None,
                     np.int64, np.int64, np.int64] + [np.int64] * (3 * batch_dims)
    kernel = _KERNELS[key] = runtime.programs.kernel(source, "ember_gemm", scalar_dtypes)
    return kernel


def _batch_strides(x: CLArray, batch: tuple) -> tuple:
    """The strides of x's matrices along the broadcast batch dims (0 where x is broadcast)."""
    return broadcast_strides(x.view_as(x.shape[:-2], x.strides[:-2]), batch)


def matmul(a: CLArray, b: CLArray) -> CLArray:
    runtime = a.runtime
    a2 = a.view_as((1,) + a.shape, (0,) + a.strides) if a.ndim == 1 else a
    b2 = b.view_as(b.shape + (1,), b.strides + (0,)) if b.ndim == 1 else b
    batch = tuple(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]))
    if a.dtype.kind == "c":
        out = gemm_complex.matmul(a2, b2, batch, _batch_strides(a2, batch), _batch_strides(b2, batch))
    elif runtime.is_cpu:
        out = gemm_cpu.matmul(a2, b2, batch, _batch_strides(a2, batch), _batch_strides(b2, batch))
    else:
        out = _tiled(a2, b2, batch)
    shape = out.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return out.view_as(shape, contiguous_strides(shape)) if shape != out.shape else out


def _tiled(a: CLArray, b: CLArray, batch: tuple) -> CLArray:
    """The local-memory tiled GEMM (GPUs), into a new contiguous (*batch, M, N)."""
    runtime = a.runtime
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    out = empty(runtime, batch + (M, N), a.dtype)
    if out.size:
        dims, (a_bs, b_bs) = collapse(batch, [_batch_strides(a, batch), _batch_strides(b, batch)])
        args = [a.buffer, a.offset, a.strides[-2], a.strides[-1], b.buffer, b.offset, b.strides[-2],
                b.strides[-1], out.buffer, M, N, K]
        for d in range(len(dims)):
            args += [dims[d], a_bs[d], b_bs[d]]
        kernel = _kernel(runtime, a.dtype, len(dims))
        groups = (-(-N // TILE) * SIDE, -(-M // TILE) * SIDE, math.prod(batch))
        runtime.enqueue(kernel, groups, (SIDE, SIDE, 1), *args)
    return out


KERNELS = {"matmul": matmul}
