"""layer_norm forward in one launch: each row's mean and variance (two passes over the row, which stays
in cache), then (x - mean) * rstd * weight + bias, written once.

The statistics are the biased variance over the normalized (trailing, contiguous) dims, as the composite
and the shared NumPy-style kernel compute them; half precision computes in float32.
"""
from __future__ import annotations

import numpy as np

from .source import Module, entry_points, row_module, threads_for

_SOURCE = r"""
template <typename T>
__device__ void layer_norm_rows(const T* x, const T* weight, const T* bias, long long cols, double eps, T* y) {
    __shared__ T shared[32];
    const long long row = blockIdx.x;
    const T* in = x + row * cols;
    T* out = y + row * cols;
    T s = 0;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += in[c];
    const T mean = block_sum(s, shared) / (T)cols;
    T q = 0;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        const T d = in[c] - mean;
        q += d * d;
    }
    const T rstd = ember_rsqrt(block_sum(q, shared) / (T)cols + (T)eps);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        T v = (in[c] - mean) * rstd;
        if (weight) v *= weight[c];
        if (bias) v += bias[c];
        out[c] = v;
    }
}
""" + entry_points("ember_layer_norm",
                   "const @T* x, const @T* weight, const @T* bias, long long cols, double eps, @T* y",
                   "layer_norm_rows<@T>(x, weight, bias, cols, eps, y)")
SOURCE = row_module("ember_layer_norm", _SOURCE)
SOURCES = (SOURCE,)


def build(cupy, lib) -> dict:
    module = Module(cupy, SOURCE)
    low = lib.low_precision
    null = np.uint64(0)

    def flat(a, dtype):
        return null if a is None else cupy.ascontiguousarray(a.astype(dtype, copy=False)).reshape(-1)

    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        if x.size == 0:
            return x.copy()
        compute = np.dtype(np.float32) if x.dtype in low else x.dtype
        cols = int(np.prod(normalized_shape, dtype=np.int64))
        rows = cupy.ascontiguousarray(x.astype(compute, copy=False))
        out = cupy.empty_like(rows)
        kernel = module.function("ember_layer_norm", compute)
        kernel((rows.size // cols,), (threads_for(cols),),
               (rows, flat(weight, compute), flat(bias, compute), np.int64(cols), np.float64(eps), out))
        return out.astype(x.dtype, copy=False)

    return {"layer_norm": layer_norm}
