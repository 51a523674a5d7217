"""Fused optimizer steps: the CPU override of the ``adam_step`` composite.

The composite costs about twelve NumPy calls per parameter, each allocating its result. Where numba is
installed, the step is one elementwise program (``ember.dispatch.fusion``) compiled by the CPU fusion
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

from ember.dispatch import OPS, ElementwiseProgram, Step, adam_scalars, value_dtype

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


def _adam_program(shape: tuple, dtype, maximize: bool, weight_decay: str | None) -> ElementwiseProgram:
    """Adam's update as the NumPy kernel computes it, over (param, grad, exp_avg, exp_avg_sq) and the 0-d
    scalars (beta1, 1 - beta1, beta2, 1 - beta2, eps_hat, step_size[, weight_decay or 1 - lr * weight_decay]);
    ``weight_decay`` is None, "l2" or "decoupled". Outputs: the new parameter, exp_avg and exp_avg_sq."""
    steps: list[Step] = []

    def step(op: str, *operands) -> tuple:
        defaults = tuple(OPS[op].params[i].default for i in OPS[op].attr_positions)  # alpha=1, rounding_mode=None
        steps.append(Step(op, operands, defaults, dtype, dtype))
        return ("step", len(steps) - 1)

    param, grad, exp_avg, exp_avg_sq, beta1, one_minus_beta1, beta2, one_minus_beta2, eps_hat, step_size, decay = (
        ("input", k) for k in range(11))
    if maximize:
        grad = step("neg", grad)
    if weight_decay == "l2":
        grad = step("add", grad, step("mul", param, decay))
    m = step("add", step("mul", exp_avg, beta1), step("mul", grad, one_minus_beta1))
    v = step("add", step("mul", exp_avg_sq, beta2), step("mul", step("mul", grad, grad), one_minus_beta2))
    update = step("mul", step("div", m, step("add", step("sqrt", v), eps_hat)), step_size)
    if weight_decay == "decoupled":
        param = step("mul", param, decay)
    new_param = step("sub", param, update)
    inputs = ((shape, dtype),) * 4 + (((), value_dtype(dtype)),) * (6 + (weight_decay is not None))
    return ElementwiseProgram(inputs, tuple(steps), (new_param[1], m[1], v[1]), shape)


def fused_adam_step(parallel: bool | None = None):
    """The ``adam_step`` kernel as one compiled pass per parameter, or None without numba."""
    if not fusion.numba_available():
        return None
    runners: dict = {}

    def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                  decoupled_weight_decay, maximize):
        mode = None if weight_decay == 0 else "decoupled" if decoupled_weight_decay else "l2"
        key = (param.shape, param.dtype, maximize, mode)
        run = runners.get(key)
        if run is None:
            run = runners[key] = fusion.fuse_elementwise(
                _adam_program(param.shape, EMBER_DTYPE[param.dtype], maximize, mode), parallel=parallel)
        scalar = np.float32 if param.dtype in LOW_PRECISION else param.dtype.type
        step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
        scalars = [beta1, 1.0 - beta1, beta2, 1.0 - beta2, eps_hat, step_size]
        if mode is not None:
            scalars.append(weight_decay if mode == "l2" else 1.0 - lr * weight_decay)
        return run(param, grad, exp_avg, exp_avg_sq, *(np.array(value, scalar) for value in scalars))
    return adam_step


KERNELS = {"adam_step": fused_adam_step() or numpy_adam_step}
