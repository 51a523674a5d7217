"""matmul as a tiled GEMM, batched and broadcast over leading dims; inputs are read through their
strides, so transposed operands need no copy. Two tilings of the same product:

- GPUs (and other non-CPU devices): each work-group computes a 64x64 tile of C; each of its 16x16
  work-items accumulates a 4x4 block in registers from 16-deep slices of A and B staged in local memory.
- CPU devices (PoCL): local memory is ordinary cache and barriers are costly, so each work-item
  computes an 8x16 block of C with vector registers, streaming a row of B and a column of A per step.
"""
from __future__ import annotations

import numpy as np

from ..array import CLArray, empty
from ..cltypes import STORAGE_CTYPE, compute_ctype, load, store
from ..strided import collapse

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
    walk = "".join(f"aoff += (q % bd{d}) * abs{d}; boff += (q % bd{d}) * bbs{d}; q /= bd{d};\n    "
                   for d in range(batch_dims - 1, -1, -1))
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
    {walk}const long coff = batch * M * N;
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


ROWS, COLUMNS = 8, 16  # the C block of one work-item on CPU devices


def _blocked_kernel(runtime, dtype: np.dtype, batch_dims: int):
    key = (runtime.index, "blocked", dtype, batch_dims)
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    t, acc = STORAGE_CTYPE[dtype], _accumulator(dtype)
    vector = acc in ("float", "double") and dtype != np.float16
    batch_params = "".join(f", const long bd{d}, const long abs{d}, const long bbs{d}" for d in range(batch_dims))
    walk = "".join(f"aoff += (q % bd{d}) * abs{d}; boff += (q % bd{d}) * bbs{d}; q /= bd{d};\n    "
                   for d in range(batch_dims - 1, -1, -1))
    lanes = COLUMNS // 8
    fast = f"""
    if ({'b_sn == 1 && ' if vector else '0 && '}m0 + {ROWS} <= M && n0 + {COLUMNS} <= N) {{
        {acc}8 sum[{ROWS}][{lanes}];
        for (int i = 0; i < {ROWS}; ++i) for (int j = 0; j < {lanes}; ++j) sum[i][j] = 0;
        for (long k = 0; k < K; ++k) {{
            __global const {t} *row = B + boff + k * b_sk + n0;
            {acc}8 b[{lanes}];
            for (int j = 0; j < {lanes}; ++j) b[j] = vload8(j, row);
            for (int i = 0; i < {ROWS}; ++i) {{
                const {acc} a = A[aoff + (m0 + i) * a_sm + k * a_sk];
                for (int j = 0; j < {lanes}; ++j) sum[i][j] = fma(({acc}8)a, b[j], sum[i][j]);
            }}
        }}
        for (int i = 0; i < {ROWS}; ++i) for (int j = 0; j < {lanes}; ++j)
            vstore8(sum[i][j], j, C + coff + (m0 + i) * N + n0);
        return;
    }}""" if vector else ""
    source = f"""
__kernel void ember_gemm_blocked(__global const {t} *A, const long a_o, const long a_sm, const long a_sk,
                __global const {t} *B, const long b_o, const long b_sk, const long b_sn,
                __global {t} *C, const long M, const long N, const long K{batch_params})
{{
    const long m0 = get_global_id(0) * {ROWS}, n0 = get_global_id(1) * {COLUMNS};
    const long batch = get_global_id(2);
    if (n0 >= N || m0 >= M) return;
    long aoff = a_o, boff = b_o, q = batch;
    {walk}const long coff = batch * M * N;{fast}
    const int rows = min((long){ROWS}, M - m0), cols = min((long){COLUMNS}, N - n0);
    {acc} sum[{ROWS}][{COLUMNS}];
    for (int i = 0; i < {ROWS}; ++i) for (int j = 0; j < {COLUMNS}; ++j) sum[i][j] = 0;
    for (long k = 0; k < K; ++k) {{
        {acc} b[{COLUMNS}];
        for (int j = 0; j < cols; ++j) b[j] = ({acc}){load(dtype, "B", "boff + k * b_sk + (n0 + j) * b_sn")};
        for (int i = 0; i < rows; ++i) {{
            const {acc} a = ({acc}){load(dtype, "A", "aoff + (m0 + i) * a_sm + k * a_sk")};
            for (int j = 0; j < cols; ++j) sum[i][j] += a * b[j];
        }}
    }}
    for (int i = 0; i < rows; ++i) for (int j = 0; j < cols; ++j) {{
        {store(dtype, "C", "coff + (m0 + i) * N + n0 + j", "sum[i][j]")}
    }}
}}
"""
    scalar_dtypes = [None, np.int64, np.int64, np.int64, None, np.int64, np.int64, np.int64, None,
                     np.int64, np.int64, np.int64] + [np.int64] * (3 * batch_dims)
    kernel = _KERNELS[key] = runtime.programs.kernel(source, "ember_gemm_blocked", scalar_dtypes)
    return kernel


def _batch_strides(x: CLArray, batch: tuple) -> tuple:
    lead = len(batch) - (x.ndim - 2)
    return (0,) * lead + tuple(0 if s == 1 and b != 1 else st for s, st, b in zip(x.shape[:-2], x.strides[:-2],
                                                                                    batch[lead:]))


def matmul(a: CLArray, b: CLArray) -> CLArray:
    runtime = a.runtime
    a2 = a.view_as((1,) + a.shape, (0,) + a.strides) if a.ndim == 1 else a
    b2 = b.view_as(b.shape + (1,), b.strides + (0,)) if b.ndim == 1 else b
    batch = tuple(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]))
    M, K, N = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    out = empty(runtime, batch + (M, N), a.dtype)
    count = int(np.prod(batch)) if batch else 1
    if out.size:
        dims, (a_bs, b_bs) = collapse(batch, [_batch_strides(a2, batch), _batch_strides(b2, batch)])
        if not dims:
            dims, a_bs, b_bs = (), (), ()
        args = [a2.buffer, a2.offset, a2.strides[-2], a2.strides[-1], b2.buffer, b2.offset, b2.strides[-2],
                b2.strides[-1], out.buffer, M, N, K]
        for d in range(len(dims)):
            args += [dims[d], a_bs[d], b_bs[d]]
        if runtime.is_cpu:
            kernel = _blocked_kernel(runtime, a.dtype, len(dims))
            kernel(runtime.queue, (-(-M // ROWS), -(-N // COLUMNS), count), (1, 1, 1), *args)
        else:
            kernel = _kernel(runtime, a.dtype, len(dims))
            groups = (-(-N // TILE) * SIDE, -(-M // TILE) * SIDE, count)
            kernel(runtime.queue, groups, (SIDE, SIDE, 1), *args)
    shape = out.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return out.view_as(shape, _contiguous(shape)) if shape != out.shape else out


def _contiguous(shape):
    from ..array import contiguous_strides
    return contiguous_strides(shape)


KERNELS = {"matmul": matmul}
