"""Fused optimizer steps: the CPU override of the ``adam_step`` composite.

The composite costs about twelve NumPy calls per parameter, each allocating its result. Where numba is
installed, the step is Adam's elementwise program (``ember.backends.codegen.optim``) compiled by the CPU fusion
hook: m, v and the parameter in one pass per tensor, the step's scalars passed as 0-d inputs so that
one compiled loop serves every step and every parameter of a dtype. Without numba, the NumPy kernel
computes the moments into their two new arrays and every other intermediate through one scratch array
that ends up as the new parameter: three allocations per parameter and step, and no dispatch in
between. Both do the same float32 operations in the same order, so they agree bit for bit.
Half-precision parameters compute in float32 and are rounded once at the end, as PyTorch's fused
optimizers do. Self-contained: the backend adds ``KERNELS`` to its table.
"""
from __future__ import annotations

import numpy as np

from ember.backends.codegen.optim import adam_mode, adam_program, adam_scalar_inputs
from ember.dispatch import adam_scalars

from . import fusion
from .dtypes import EMBER_DTYPE, LOW_PRECISION


def numpy_adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
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


def fused_adam_step(parallel: bool | None = None):
    """The ``adam_step`` kernel as one compiled pass per parameter, or None without numba."""
    if not fusion.numba_available():
        return None
    runners: dict = {}

    def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                  decoupled_weight_decay, maximize):
        mode = adam_mode(weight_decay, decoupled_weight_decay)
        key = (param.shape, param.dtype, maximize, mode)
        run = runners.get(key)
        if run is None:
            run = runners[key] = fusion.fuse_elementwise(
                adam_program(EMBER_DTYPE[param.dtype], maximize, mode, param.shape), parallel=parallel)
        scalar = np.float32 if param.dtype in LOW_PRECISION else param.dtype.type
        scalars = adam_scalar_inputs(step, lr, beta1, beta2, eps, weight_decay, mode)
        return run(param, grad, exp_avg, exp_avg_sq, *(np.array(value, scalar) for value in scalars))
    return adam_step


KERNELS = {"adam_step": fused_adam_step() or numpy_adam_step}
