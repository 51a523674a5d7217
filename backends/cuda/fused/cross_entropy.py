"""cross_entropy with class-index targets, forward and backward, one block per position.

Forward: each row's log-sum-exp, the target's score, and (with label smoothing) the weighted row sum
come out of one launch, which writes the per-position loss and weight; 'sum' and 'mean' add one
reduction each. Backward: one launch writes the whole gradient, scale * (softmax * mass - q), after
one reduction for the weight total that 'mean' divides by. The meaning of every term is the shared
NumPy-style kernel's (ember.backends.arraykernels.losses), which the CPU conformance suite checks.
"""
from __future__ import annotations

import numpy as np

from ember.backends.arraykernels.losses import rows_of, unrows_of

from ..kernel_sources import ReductionSource
from .source import Module, entry_points, row_module, threads_for

_SOURCE = r"""
// Per row: max, sum of exp(x - max), and (when smoothing) sum of w[c] * x[c] and the class weight total.
template <typename T>
__device__ void row_terms(const T* in, const T* weight, long long cols, int smoothing, T* shared,
                          T* top, T* total, T* weighted, T* classes) {
    T m = ember_neg_inf((T)0);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = ember_max(m, in[c]);
    m = block_max(m, shared);
    T s = 0, ws = 0, wt = 0;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        s += ember_exp(in[c] - m);
        if (smoothing) {
            const T w = weight ? weight[c] : (T)1;
            ws += w * in[c];
            wt += w;
        }
    }
    *top = m;
    *total = block_sum(s, shared);
    if (smoothing) {
        *weighted = block_sum(ws, shared);
        *classes = block_sum(wt, shared);
    }
}

template <typename T>
__device__ void ce_forward(const T* x, const long long* target, const T* weight, long long cols,
                           long long ignore_index, double smoothing, T* loss, T* weights) {
    __shared__ T shared[32];
    const long long row = blockIdx.x;
    const T* in = x + row * cols;
    T top, total, weighted = 0, classes = 0;
    row_terms(in, weight, cols, smoothing > 0, shared, &top, &total, &weighted, &classes);
    if (threadIdx.x != 0) return;
    const long long t = target[row];
    const bool counted = t != ignore_index;
    const T w = counted ? (weight ? weight[t] : (T)1) : (T)0;
    const T normalizer = top + ember_log(total);  // log-sum-exp
    T value = counted ? w * (normalizer - in[t]) : (T)0;
    if (smoothing > 0) {
        const T eps = (T)smoothing;
        const T smooth = normalizer * classes - weighted;  // -sum_c w[c] * log_softmax(x)[c]
        value = ((T)1 - eps) * value + eps / (T)cols * smooth;
    }
    loss[row] = counted ? value : (T)0;
    weights[row] = w;
}

template <typename T>
__device__ void ce_backward(const T* grad_output, int per_row, const T* denominator, const T* x,
                            const long long* target, const T* weight, long long cols, long long ignore_index,
                            double smoothing, T* grad) {
    __shared__ T shared[32];
    const long long row = blockIdx.x;
    const T* in = x + row * cols;
    T* out = grad + row * cols;
    T top, total, weighted = 0, classes = (T)cols;
    row_terms(in, weight, cols, smoothing > 0 && weight != 0, shared, &top, &total, &weighted, &classes);
    const long long t = target[row];
    const bool counted = t != ignore_index;
    const T w = counted ? (weight ? weight[t] : (T)1) : (T)0;
    T scale = per_row ? grad_output[row] : grad_output[0];
    if (denominator) scale = scale / denominator[0];
    if (!counted) scale = 0;
    const T eps = (T)smoothing, spread = eps / (T)cols;
    const T mass = ((T)1 - eps) * w + spread * classes;
    const T coefficient = scale * mass / total;
    const T hit = ((T)1 - eps) * scale * w;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        T g = ember_exp(in[c] - top) * coefficient;
        if (c == t) g -= hit;
        if (smoothing > 0) g -= spread * scale * (weight ? weight[c] : (T)1);
        out[c] = g;
    }
}
""" + entry_points(
    "ember_ce_forward",
    "const @T* x, const long long* target, const @T* weight, long long cols, long long ignore_index, "
    "double smoothing, @T* loss, @T* weights",
    "ce_forward<@T>(x, target, weight, cols, ignore_index, smoothing, loss, weights)",
) + entry_points(
    "ember_ce_backward",
    "const @T* grad_output, int per_row, const @T* denominator, const @T* x, const long long* target, "
    "const @T* weight, long long cols, long long ignore_index, double smoothing, @T* grad",
    "ce_backward<@T>(grad_output, per_row, denominator, x, target, weight, cols, ignore_index, smoothing, grad)",
)
SOURCE = row_module("ember_cross_entropy", _SOURCE)
# the total weight of the counted targets, which 'mean' divides by (rows are float32 or float64)
WEIGHT_TOTAL = ReductionSource(
    "int64 t, raw T w, int64 ignore_index, int32 weighted", "T total",
    "t == ignore_index ? (T)0 : (weighted ? w[t] : (T)1)", "a + b", "total = a", "0", "ember_ce_weight_total",
    dtypes=("float32", "float64"), scalars=("ignore_index", "weighted"))
SOURCES = (SOURCE, WEIGHT_TOTAL)


def build(cupy, lib) -> dict:
    module = Module(cupy, SOURCE)
    low = lib.low_precision
    null = np.uint64(0)  # a null pointer argument: "no class weights", "no denominator"

    weight_total = WEIGHT_TOTAL.build(cupy)

    def widened(*arrays):
        return [a.astype(np.float32) if a is not None and a.dtype in low else a for a in arrays]

    def prepare(x, target, weight):
        rows = cupy.ascontiguousarray(rows_of(cupy, x))
        flat = cupy.ascontiguousarray(target.reshape(-1)).astype(np.int64, copy=False)
        if weight is not None:
            weight = cupy.ascontiguousarray(weight.astype(rows.dtype, copy=False))
        return rows, flat, weight

    def total_weight(flat, weight, ignore_index, dtype):
        stand_in = weight if weight is not None else cupy.ones(1, dtype)
        return weight_total(flat, stand_in, np.int64(ignore_index), np.int32(weight is not None))

    def cross_entropy(x, target, weight, ignore_index, label_smoothing, reduction):
        dtype = x.dtype
        x, weight = widened(x, weight)
        rows, flat, weight = prepare(x, target, weight)
        count, cols = rows.shape
        losses, weights = cupy.empty(count, rows.dtype), cupy.empty(count, rows.dtype)
        if count:
            kernel = module.function("ember_ce_forward", rows.dtype)
            kernel((count,), (threads_for(cols),),
                   (rows, flat, null if weight is None else weight, np.int64(cols), np.int64(ignore_index),
                    np.float64(label_smoothing), losses, weights))
        if reduction == "none":
            out = losses.reshape(target.shape)
        elif reduction == "sum":
            out = losses.sum()
        else:
            out = losses.sum() / weights.sum()  # 0 / 0 is NaN when every target is ignored, as in PyTorch
        return out.astype(dtype, copy=False)

    def cross_entropy_backward(grad_output, x, target, weight, ignore_index, label_smoothing, reduction):
        dtype = x.dtype
        grad_output, x, weight = widened(grad_output, x, weight)
        rows, flat, weight = prepare(x, target, weight)
        count, cols = rows.shape
        grad = cupy.empty_like(rows)
        if count:
            per_row = reduction == "none"
            incoming = cupy.ascontiguousarray(grad_output.astype(rows.dtype, copy=False)).reshape(-1)
            denominator = total_weight(flat, weight, ignore_index, rows.dtype) if reduction == "mean" else null
            kernel = module.function("ember_ce_backward", rows.dtype)
            kernel((count,), (threads_for(cols),),
                   (incoming, np.int32(per_row), denominator, rows, flat, null if weight is None else weight,
                    np.int64(cols), np.int64(ignore_index), np.float64(label_smoothing), grad))
        return unrows_of(cupy, grad, x).astype(dtype, copy=False)

    return {"cross_entropy_indices": cross_entropy, "cross_entropy_indices_backward": cross_entropy_backward}
