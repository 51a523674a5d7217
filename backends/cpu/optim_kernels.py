"""Fused optimizer steps for NumPy: the CPU override of the ``adam_step`` composite.

The composite costs about twelve NumPy calls per parameter, each allocating its result. Here the
moments are computed into their two new arrays and every other intermediate goes through one
scratch array that ends up as the new parameter: three allocations per parameter and step, and no
dispatch in between. Half-precision parameters compute in float32 and are rounded once at the end,
as PyTorch's fused optimizers do. Self-contained: the backend adds ``KERNELS`` to its table.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch.ops.optim import adam_scalars

from .dtypes import LOW_PRECISION


def _adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
               decoupled_weight_decay, maximize):
    low = param.dtype if param.dtype in LOW_PRECISION else None
    if low is not None:
        param, grad, exp_avg, exp_avg_sq = (a.astype(np.float32) for a in (param, grad, exp_avg, exp_avg_sq))
    if maximize:
        grad = np.negative(grad)
    if weight_decay != 0 and not decoupled_weight_decay:
        grad = grad + param * np.asarray(weight_decay, param.dtype)
    shape, dtype = param.shape, param.dtype  # out= keeps 0-d results arrays (ufuncs return scalars)
    scratch = np.multiply(grad, 1.0 - beta1, out=np.empty(shape, dtype))
    m = np.multiply(exp_avg, beta1, out=np.empty(shape, dtype))
    m += scratch
    v = np.multiply(exp_avg_sq, beta2, out=np.empty(shape, dtype))
    np.multiply(grad, grad, out=scratch)
    scratch *= 1.0 - beta2
    v += scratch
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    np.sqrt(v, out=scratch)
    scratch += eps_hat
    np.divide(m, scratch, out=scratch)
    scratch *= step_size
    if weight_decay != 0 and decoupled_weight_decay:
        np.subtract(param * (1.0 - lr * weight_decay), scratch, out=scratch)
    else:
        np.subtract(param, scratch, out=scratch)
    if low is not None:
        return scratch.astype(low), m.astype(low), v.astype(low)
    return scratch, m, v


KERNELS = {"adam_step": _adam_step}
