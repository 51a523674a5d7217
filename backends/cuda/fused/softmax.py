"""softmax and log_softmax in one kernel launch: each row's max, sum of exponentials and output in one block.

A chain of CuPy calls takes five launches and two temporaries; this takes one. The reduced dim is
moved last (a copy only when it is not last already), and half precision computes in float32.
"""
from __future__ import annotations

from ember.backends.arraykernels.common import in_float32

from .source import Module, entry_points, row_module, threads_for

_SOURCE = r"""
template <typename T>
__device__ void softmax_rows(const T* x, T* y, long long cols, int log_mode) {
    __shared__ T shared[32];
    const long long row = blockIdx.x;
    const T* in = x + row * cols;
    T* out = y + row * cols;
    T top = ember_neg_inf((T)0);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) top = ember_max(top, in[c]);
    top = block_max(top, shared);
    T total = 0;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) total += ember_exp(in[c] - top);
    total = block_sum(total, shared);
    if (log_mode) {
        const T normalizer = top + ember_log(total);
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = in[c] - normalizer;
    } else {
        const T scale = (T)1 / total;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = ember_exp(in[c] - top) * scale;
    }
}
""" + entry_points("ember_softmax", "const @T* x, @T* y, long long cols, int log_mode",
                   "softmax_rows<@T>(x, y, cols, log_mode)")
SOURCE = row_module("ember_softmax", _SOURCE)
SOURCES = (SOURCE,)


def build(cupy, lib) -> dict:
    import numpy as np
    module = Module(cupy, SOURCE)

    def run(a, dim, log: bool):
        if a.ndim == 0:
            return cupy.zeros_like(a) if log else cupy.ones_like(a)
        if a.size == 0:
            return a.copy()
        rows = cupy.ascontiguousarray(cupy.moveaxis(a, dim, -1))
        out = cupy.empty_like(rows)
        cols = rows.shape[-1]
        kernel = module.function("ember_softmax", a.dtype)
        kernel((rows.size // cols,), (threads_for(cols),), (rows, out, np.int64(cols), np.int32(log)))
        return cupy.moveaxis(out, -1, dim)

    widened = in_float32(lib)

    @widened
    def softmax(a, dim, dtype=None):
        return run(a, dim, False)

    @widened
    def log_softmax(a, dim, dtype=None):
        return run(a, dim, True)

    return {"softmax": softmax, "log_softmax": log_softmax}
