"""CUDA C shared by the fused row kernels: math overloads and block-wide reductions.

Every row kernel runs one thread block per row (blockDim a multiple of 32, at most 1024) and
accumulates in ``float`` for float input and ``double`` for double input; half-precision input is
widened to float32 before it reaches them. Rows are contiguous, ``cols`` elements apart.
"""
from __future__ import annotations

import numpy as np

from ..kernel_sources import ModuleSource

ROW_HELPERS = r"""
__device__ __forceinline__ float ember_exp(float v) { return expf(v); }
__device__ __forceinline__ double ember_exp(double v) { return exp(v); }
__device__ __forceinline__ float ember_log(float v) { return logf(v); }
__device__ __forceinline__ double ember_log(double v) { return log(v); }
__device__ __forceinline__ float ember_rsqrt(float v) { return rsqrtf(v); }
__device__ __forceinline__ double ember_rsqrt(double v) { return rsqrt(v); }
__device__ __forceinline__ float ember_neg_inf(float) { return __int_as_float(0xff800000); }
__device__ __forceinline__ double ember_neg_inf(double) { return __longlong_as_double(0xfff0000000000000ULL); }

// max that propagates NaN, as NumPy's and PyTorch's reductions do
template <typename A> __device__ __forceinline__ A ember_max(A a, A b) { return (a != a || a > b) ? a : b; }

template <typename A> __device__ __forceinline__ A warp_sum(A v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}
template <typename A> __device__ __forceinline__ A warp_max(A v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = ember_max(v, __shfl_down_sync(0xffffffffu, v, offset));
    return v;
}

// The block's sum (or max) of every thread's v, returned to every thread. `shared` holds 32 values;
// the leading barrier lets a block call this repeatedly with the same buffer.
template <typename A> __device__ A block_sum(A v, A* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = threadIdx.x < warps ? shared[threadIdx.x] : (A)0;
        v = warp_sum(v);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}
template <typename A> __device__ A block_max(A v, A* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = threadIdx.x < warps ? shared[threadIdx.x] : ember_neg_inf((A)0);
        v = warp_max(v);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}
"""

#: NumPy dtype -> the suffix of the extern "C" kernel names instantiated for it
SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def threads_for(cols: int) -> int:
    """Threads per row: enough to cover short rows in one pass, capped at 1024."""
    threads = 32
    while threads < cols and threads < 1024:
        threads *= 2
    return threads


def entry_points(name: str, params: str, call: str) -> str:
    """``extern "C"`` kernels ``{name}_f32`` and ``{name}_f64``, each calling a device template.

    ``params`` and ``call`` write the element type as ``@T``; the entry points fix it to float and double,
    so that CuPy's RawModule can look them up by plain name.
    """
    return "".join(f'extern "C" __global__ void {name}_{suffix}({params.replace("@T", ctype)}) '
                   f'{{ {call.replace("@T", ctype)}; }}\n'
                   for suffix, ctype in (("f32", "float"), ("f64", "double")))


def row_module(name: str, code: str) -> ModuleSource:
    """The RawModule of a fused kernel file: ROW_HELPERS, then ``code``."""
    return ModuleSource(name, ROW_HELPERS + code, ("--std=c++14",))


class Module:
    """A RawModule compiled on first use, per device (CuPy caches compiled code on disk too)."""

    def __init__(self, cupy, source: ModuleSource) -> None:
        self._cupy = cupy
        self._source = source
        self._functions: dict = {}

    def function(self, name: str, dtype):
        device = self._cupy.cuda.Device().id
        key = (name, SUFFIX[np.dtype(dtype)], device)
        function = self._functions.get(key)
        if function is None:
            module = self._functions.get(("module", device))
            if module is None:
                module = self._functions[("module", device)] = self._source.build(self._cupy)
            function = self._functions[key] = module.get_function(f"{name}_{key[1]}")
        return function
