"""matmul on CPU devices (PoCL): register-blocked micro-kernels over a packed B.

On a CPU, OpenCL local memory is ordinary cache and barriers are costly, so each work-item (a
work-group of one) computes a ROWS x 16 block of C in vector registers, one k at a time: a row of
16 B values as vectors, times each of its ROWS A values splat across a vector. Two things decide
the speed on PoCL:

- B is first packed into panels of 16 columns, each stored k-major ([panel][k][16]), so a block
  streams one contiguous panel instead of striding through B (whose rows, 4 KiB apart for a
  1024-wide matrix, all fall into the same cache sets). Small products skip the packing launch.
- No OpenCL built-ins in the loop: PoCL's PyPI build compiles its built-in library for another
  CPU target than the kernel, so ``vload8`` or ``fma`` become function calls; vectors built from
  scalar loads and plain ``c += a * b`` compile to straight AVX code (about 8x faster).

Edge blocks read clamped rows and columns (always inside the operands) and store only what lies
inside C, so the inner loop has no branches.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import CLArray, contiguous_strides, empty
from ..cltypes import STORAGE_CTYPE, compute_ctype, load, store
from ..strided import broadcast_strides, collapse
from ._source import batch_walk, cached

COLUMNS = 16  # columns of C per work-item, and the width of a packed panel of B
PACK_FROM_ROWS = 16  # pack B when A has at least this many rows: below, the extra launch costs more than it saves
# vector accumulators per work-item: 12 (a 6 x 16 float block) leave 4 of AVX2's 16 registers for a row of B
# and a broadcast A value, and hide the FMA latency better than 8 (5% faster on the MLP's GEMMs here)
ACCUMULATORS = 12
PACK_GROUP = 64  # rows k of B per packing work-group (groups of one take PoCL twice as long)


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """What products accumulate in (and packed panels hold): half precision widens to float."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _layout(dtype: np.dtype) -> tuple[int, int]:
    """(lanes per vector, rows per block): 256-bit vectors (wider ones break the AVX2 ABI of PoCL builds
    for x86), and ACCUMULATORS vector accumulators, which leaves registers for the operands."""
    lanes = min(COLUMNS, 32 // _compute_dtype(dtype).itemsize)
    return lanes, max(1, ACCUMULATORS // (COLUMNS // lanes))


def _lane(j: int) -> str:
    return "0123456789abcdef"[j]


def _gemm_source(dtype: np.dtype, batch_dims: int, packed: bool) -> str:
    t, acc = STORAGE_CTYPE[dtype], compute_ctype(dtype)
    lanes, rows = _layout(dtype)
    vectors = COLUMNS // lanes
    vec = f"{acc}{lanes}" if lanes > 1 else acc
    b_type = acc if packed else t
    batch_params = "".join(f", const long bd{d}, const long abs{d}, const long bbs{d}" for d in range(batch_dims))
    walk = batch_walk([("aoff", "abs"), ("boff", "bbs")], batch_dims)
    a_rows = " ".join(f"const long ar{i} = aoff + min(m0 + {i}, M - 1) * a_sm;" for i in range(rows))
    if packed:  # boff is the start of this batch element's packed panels
        b_setup = f"__global const {acc} *panel = B + boff + (n0 / {COLUMNS}) * K * {COLUMNS};"
        b_value = lambda j: f"panel[{j}]"  # noqa: E731
        b_step = f"panel += {COLUMNS};"
    else:
        b_setup = " ".join(f"const long bc{j} = boff + min(n0 + {j}, N - 1) * b_sn;" for j in range(COLUMNS)) + \
            " long bk = 0;"
        b_value = lambda j: f"({acc}){load(dtype, 'B', f'bc{j} + bk')}"  # noqa: E731
        b_step = "bk += b_sk;"
    zero = " ".join(f"{vec} c{i}_{v} = 0;" for i in range(rows) for v in range(vectors))
    b_loads = " ".join(
        f"const {vec} b{v} = ({vec})({', '.join(b_value(v * lanes + j) for j in range(lanes))});"
        for v in range(vectors))
    products = "\n        ".join(
        f"{{ const {vec} a = ({vec})(({acc}){load(dtype, 'A', f'ar{i} + k * a_sk')}); "
        + " ".join(f"c{i}_{v} += a * b{v};" for v in range(vectors)) + " }"
        for i in range(rows))
    component = (lambda i, j: f"c{i}_{j // lanes}.s{_lane(j % lanes)}") if lanes > 1 else \
        (lambda i, j: f"c{i}_{j}")
    stores = "\n    ".join(
        f"if (m0 + {i} < M) {{ const long row = coff + (m0 + {i}) * N + n0; "
        + " ".join(f"if (n0 + {j} < N) {{ {store(dtype, 'C', f'row + {j}', component(i, j))} }}"
                   for j in range(COLUMNS)) + " }"
        for i in range(rows))
    return f"""
__kernel void ember_gemm_cpu(__global const {t} *A, const long a_o, const long a_sm, const long a_sk,
                             __global const {b_type} *B, const long b_o, const long b_sk, const long b_sn,
                             __global {t} *C, const long M, const long N, const long K{batch_params})
{{
    const long m0 = get_global_id(0) * {rows}, n0 = get_global_id(1) * {COLUMNS}, batch = get_global_id(2);
    long aoff = a_o, boff = b_o, q = batch;
    {walk}
    const long coff = batch * M * N;
    {a_rows}
    {b_setup}
    {zero}
    for (long k = 0; k < K; ++k) {{
        {b_loads}
        {products}
        {b_step}
    }}
    {stores}
}}
"""


def _pack_source(dtype: np.dtype, batch_dims: int) -> str:
    """B (strided, batched) into zero-padded panels of COLUMNS columns, k-major, in the compute type."""
    t, acc = STORAGE_CTYPE[dtype], compute_ctype(dtype)
    batch_params = "".join(f", const long bd{d}, const long bbs{d}" for d in range(batch_dims))
    walk = batch_walk([("boff", "bbs")], batch_dims)
    copies = " ".join(
        f"out[{j}] = n0 + {j} < N ? ({acc}){load(dtype, 'B', f'boff + k * b_sk + (n0 + {j}) * b_sn')} : 0;"
        for j in range(COLUMNS))
    return f"""
__kernel void ember_pack_b(__global const {t} *B, const long b_o, const long b_sk, const long b_sn,
                           __global {acc} *P, const long K, const long N{batch_params})
{{
    const long k = get_global_id(0), panel = get_global_id(1), batch = get_global_id(2);
    EMBER_GUARD(k, K)
    long boff = b_o, q = batch;
    {walk}
    const long n0 = panel * {COLUMNS};
    __global {acc} *out = P + ((batch * get_global_size(1) + panel) * K + k) * {COLUMNS};
    {copies}
}}
"""


def _kernel(runtime, kind: str, dtype: np.dtype, batch_dims: int):
    """The compiled "pack" kernel, or the "packed" or "strided" GEMM."""
    def build():
        if kind == "pack":
            scalars = [None, np.int64, np.int64, np.int64, None, np.int64, np.int64] + [np.int64] * (2 * batch_dims)
            return _pack_source(dtype, batch_dims), "ember_pack_b", scalars
        scalars = [None, np.int64, np.int64, np.int64, None, np.int64, np.int64, np.int64, None,
                   np.int64, np.int64, np.int64] + [np.int64] * (3 * batch_dims)
        return _gemm_source(dtype, batch_dims, kind == "packed"), "ember_gemm_cpu", scalars
    return cached(runtime, ("gemm_cpu", kind, dtype, batch_dims), build)


def _packed(b: CLArray, batch: tuple, b_batch: tuple) -> tuple[CLArray, tuple]:
    """B packed into panels, and the strides (in elements) of its batch elements along ``batch``'s dims."""
    runtime = b.runtime
    K, N = b.shape[-2:]
    panels = -(-N // COLUMNS)
    count = math.prod(b_batch)
    block = panels * K * COLUMNS
    out = empty(runtime, (count * block,), _compute_dtype(b.dtype))
    dims, (strides,) = collapse(b_batch, [b.strides[:-2]])
    args = [b.buffer, b.offset, b.strides[-2], b.strides[-1], out.buffer, K, N]
    for size, stride in zip(dims, strides):
        args += [size, stride]
    group = min(PACK_GROUP, runtime.max_group, 1 << (K - 1).bit_length())
    kernel = _kernel(runtime, "pack", b.dtype, len(dims))
    if K % group == 0:
        kernel = runtime.programs.exact(kernel)
    runtime.enqueue(kernel, (-(-K // group) * group, panels, count), (group, 1, 1), *args)
    blocks = out.view_as(b_batch, tuple(block * s for s in contiguous_strides(b_batch)))  # one per B matrix
    return out, broadcast_strides(blocks, batch)


def matmul(a: CLArray, b: CLArray, batch: tuple, a_batch_strides: tuple, b_batch_strides: tuple) -> CLArray:
    """``a @ b`` for 2-d-or-more operands broadcast over ``batch``, into a new contiguous (*batch, M, N)."""
    runtime = a.runtime
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    out = empty(runtime, batch + (M, N), a.dtype)
    count = math.prod(batch)
    if not out.size:
        return out
    packed = M >= PACK_FROM_ROWS and K > 0
    if packed:
        b_buffer, b_strides = _packed(b, batch, b.shape[:-2])
        b_args = [b_buffer.buffer, 0, 0, 0]
    else:
        b_strides = b_batch_strides
        b_args = [b.buffer, b.offset, b.strides[-2], b.strides[-1]]
    dims, (a_bs, b_bs) = collapse(batch, [a_batch_strides, b_strides])
    args = [a.buffer, a.offset, a.strides[-2], a.strides[-1], *b_args, out.buffer, M, N, K]
    for d in range(len(dims)):
        args += [dims[d], a_bs[d], b_bs[d]]
    _, rows = _layout(a.dtype)
    kernel = _kernel(runtime, "packed" if packed else "strided", a.dtype, len(dims))
    runtime.enqueue(kernel, (-(-M // rows), -(-N // COLUMNS), count), (1, 1, 1), *args)
    return out
