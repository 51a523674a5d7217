"""adam_step (Adam and AdamW) as one elementwise kernel per parameter: the new parameter and both moment
estimates in a single pass, where the composite launches about a dozen kernels and temporaries.

Half precision computes in float32 and rounds once at the end (double stays double), as PyTorch's fused
optimizers do; the bias corrections are folded into two scalars by the schema's ``adam_scalars``.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import adam_scalars

from ..kernel_sources import CUPY_FLOATS, ElementwiseSource

_PREAMBLE = r"""
template <typename T> struct ember_accumulate { typedef float type; };
template <> struct ember_accumulate<double> { typedef double type; };
__device__ __forceinline__ float ember_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double ember_sqrt(double v) { return sqrt(v); }
"""

_STEP = """
typedef typename ember_accumulate<T>::type A;
A g = (A)grad;
A p = (A)param;
if (mode & 1) g = -g;
if (mode & 2) g += p * (A)weight_decay;
const A m = (A)exp_avg * (A)beta1 + g * (A)(1.0 - beta1);
const A v = (A)exp_avg_sq * (A)beta2 + g * g * (A)(1.0 - beta2);
const A update = m * (A)step_size / (ember_sqrt(v) + (A)eps_hat);
if (mode & 4) p = p * (A)decay;
new_param = (T)(p - update);
new_exp_avg = (T)m;
new_exp_avg_sq = (T)v;
"""

_MAXIMIZE, _L2, _DECOUPLED = 1, 2, 4


SOURCE = ElementwiseSource(
    "T param, T grad, T exp_avg, T exp_avg_sq, float64 beta1, float64 beta2, float64 step_size, "
    "float64 eps_hat, float64 weight_decay, float64 decay, int32 mode",
    "T new_param, T new_exp_avg, T new_exp_avg_sq", _STEP, "ember_adam_step", preamble=_PREAMBLE, dtypes=CUPY_FLOATS,
    scalars=("beta1", "beta2", "step_size", "eps_hat", "weight_decay", "decay", "mode"))
SOURCES = (SOURCE,)


def build(cupy, lib) -> dict:
    kernel = SOURCE.build(cupy)

    def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                  decoupled_weight_decay, maximize):
        step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
        mode = (_MAXIMIZE if maximize else 0) | (
            (_DECOUPLED if decoupled_weight_decay else _L2) if weight_decay != 0 else 0)
        return kernel(param, grad, exp_avg, exp_avg_sq, beta1, beta2, step_size, eps_hat, weight_decay,
                      1.0 - lr * weight_decay, np.int32(mode))

    return {"adam_step": adam_step}
