"""max_pool2d forward and backward, one thread per output element.

The shared kernels loop over the kernel's taps with whole-array operations (three or four launches per
tap); here each output scans its own window. The backward re-finds each window's choice by PyTorch's
rule (the first element inside the input, replaced by every later one that is larger or NaN) and adds
the gradient there atomically, so overlapping windows sum. float32 and float64 take these kernels;
other dtypes keep the shared ones.
"""
from __future__ import annotations

import numpy as np

from ember.backends.arraykernels.pooling import pool_extent

from .source import Module, entry_points, row_module

_SOURCE = r"""
struct Window {
    long long h, w, oh, ow; int kh, kw, sh, sw, ph, pw, dh, dw;
};

// The flat input index (within its plane) that PyTorch's max pooling picks for output `o` of plane `p`.
template <typename T>
__device__ long long window_choice(const T* plane, long long o, const Window& g, T* best_out) {
    const long long oy = o / g.ow, ox = o % g.ow;
    long long chosen = -1;
    T best = ember_neg_inf((T)0);
    for (int i = 0; i < g.kh; ++i) {
        const long long y = oy * g.sh - g.ph + (long long)i * g.dh;
        if (y < 0 || y >= g.h) continue;
        for (int j = 0; j < g.kw; ++j) {
            const long long x = ox * g.sw - g.pw + (long long)j * g.dw;
            if (x < 0 || x >= g.w) continue;
            const T v = plane[y * g.w + x];
            if (chosen < 0 || v > best || v != v) chosen = y * g.w + x;
            best = ember_max(best, v);  // NaN propagates: a window holding one has NaN as its maximum
        }
    }
    *best_out = best;
    return chosen;
}

template <typename T>
__device__ void max_pool_forward(const T* x, T* y, long long planes, Window g) {
    const long long per_plane = g.oh * g.ow, total = planes * per_plane;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < total;
         k += (long long)gridDim.x * blockDim.x) {
        const long long p = k / per_plane;
        T best;
        window_choice(x + p * g.h * g.w, k % per_plane, g, &best);
        y[k] = best;
    }
}

template <typename T>
__device__ void max_pool_backward(const T* grad, const T* x, T* grad_input, long long planes, Window g) {
    const long long per_plane = g.oh * g.ow, total = planes * per_plane;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < total;
         k += (long long)gridDim.x * blockDim.x) {
        const long long p = k / per_plane;
        T best;
        const long long chosen = window_choice(x + p * g.h * g.w, k % per_plane, g, &best);
        if (chosen >= 0) atomicAdd(grad_input + p * g.h * g.w + chosen, grad[k]);
    }
}
""" + entry_points(
    "ember_max_pool_forward",
    "const @T* x, @T* y, long long planes, long long h, long long w, long long oh, long long ow, "
    "int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw",
    "Window g = {h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw}; max_pool_forward<@T>(x, y, planes, g)",
) + entry_points(
    "ember_max_pool_backward",
    "const @T* grad, const @T* x, @T* grad_input, long long planes, long long h, long long w, long long oh, "
    "long long ow, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw",
    "Window g = {h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw}; max_pool_backward<@T>(grad, x, grad_input, "
    "planes, g)",
)
SOURCE = row_module("ember_max_pool", _SOURCE)
SOURCES = (SOURCE,)

_FAST = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_THREADS = 256


def _blocks(total: int) -> int:
    return max(1, min((total + _THREADS - 1) // _THREADS, 65535 * 8))


def build(cupy, shared: dict) -> dict:
    module = Module(cupy, SOURCE)
    shared_forward, shared_backward = shared["max_pool2d"], shared["max_pool2d_backward"]

    def window(x, out, kernel_size, stride, padding, dilation):
        h, w = x.shape[-2:]
        return (np.int64(h), np.int64(w), np.int64(out[0]), np.int64(out[1]),
                *(np.int32(v) for v in (*kernel_size, *stride, *padding, *dilation)))

    def max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
        if x.dtype not in _FAST:
            return shared_forward(x, kernel_size, stride, padding, dilation, ceil_mode)
        x = cupy.ascontiguousarray(x)
        out, _ = pool_extent(x.shape[-2:], kernel_size, stride, padding, dilation, ceil_mode)
        planes = int(np.prod(x.shape[:-2], dtype=np.int64))
        y = cupy.empty(x.shape[:-2] + tuple(out), x.dtype)
        if y.size:
            kernel = module.function("ember_max_pool_forward", x.dtype)
            kernel((_blocks(y.size),), (_THREADS,),
                   (x, y, np.int64(planes), *window(x, out, kernel_size, stride, padding, dilation)))
        return y

    def max_pool2d_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode):
        if x.dtype not in _FAST:
            return shared_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode)
        x, grad = cupy.ascontiguousarray(x), cupy.ascontiguousarray(grad)
        planes = int(np.prod(x.shape[:-2], dtype=np.int64))
        grad_input = cupy.zeros_like(x)
        if grad.size:
            kernel = module.function("ember_max_pool_backward", x.dtype)
            kernel((_blocks(grad.size),), (_THREADS,),
                   (grad, x, grad_input, np.int64(planes),
                    *window(x, grad.shape[-2:], kernel_size, stride, padding, dilation)))
        return grad_input

    return {"max_pool2d": max_pool2d, "max_pool2d_backward": max_pool2d_backward}
