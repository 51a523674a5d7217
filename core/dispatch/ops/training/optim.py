"""Optimizer update ops: one call per parameter computes a whole step.

An optimizer written as a dozen separate tensor ops per parameter pays a dozen dispatches and a dozen
freshly allocated temporaries per parameter and step. Declared as one composite op, the same math
stays written in Ember ops (so it runs on every backend and is checked against a NumPy reference by
the conformance suite), and a backend may override it with a fused kernel: the CPU one reuses one
scratch array across the step. Like PyTorch's ``_fused_adam``, but pure: the op returns the new
parameter and moment estimates; the optimizer copies the parameter into place and rebinds its state,
as ``ember.optim`` does for every optimizer.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F


def adam_scalars(step: int, lr: float, beta1: float, beta2: float, eps: float) -> tuple[float, float]:
    """Adam's bias corrections folded into two scalars: the update is
    ``lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps) == m * step_size / (sqrt(v) + eps_hat)``."""
    bias_correction2_sqrt = math.sqrt(1.0 - beta2 ** step)
    return lr * bias_correction2_sqrt / (1.0 - beta1 ** step), eps * bias_correction2_sqrt


def _adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
               decoupled_weight_decay, maximize):
    if maximize:
        grad = F.neg(grad)
    if weight_decay != 0 and not decoupled_weight_decay:
        grad = F.add(grad, F.mul(param, weight_decay))
    exp_avg = F.add(F.mul(exp_avg, beta1), F.mul(grad, 1.0 - beta1))
    exp_avg_sq = F.add(F.mul(exp_avg_sq, beta2), F.mul(F.mul(grad, grad), 1.0 - beta2))
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    update = F.div(F.mul(exp_avg, step_size), F.add(F.sqrt(exp_avg_sq), eps_hat))
    if weight_decay != 0 and decoupled_weight_decay:
        param = F.mul(param, 1.0 - lr * weight_decay)
    return F.sub(param, update), exp_avg, exp_avg_sq


def _adam_meta(param, grad, exp_avg, exp_avg_sq, *attrs):
    for name, t in (("grad", grad), ("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)):
        require(shape(t) == shape(param), "adam_step", f"{name} must have the parameter's shape {shape(param)}",
                param, t)
    return shape(param), shape(param), shape(param)


def _adam_promotion(rt, op, args):
    return rt, (rt, rt, rt)


def _adam_reference(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay=0.0,
                    decoupled_weight_decay=False, maximize=False):
    """PyTorch's Adam/AdamW step as written in its documentation."""
    grad = -grad if maximize else grad
    if weight_decay and decoupled_weight_decay:
        param = param * (1 - lr * weight_decay)
    elif weight_decay:
        grad = grad + weight_decay * param
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat, v_hat = m / (1 - beta1 ** step), v / (1 - beta2 ** step)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def _adam_samples(make, dtype):
    def tensors(shape_, noncontiguous=False):
        return (make(shape_, noncontiguous=noncontiguous), make(shape_, noncontiguous=noncontiguous),
                make(shape_, noncontiguous=noncontiguous), make(shape_, low=0.0, noncontiguous=noncontiguous))
    yield Sample((*tensors((3, 4)), 1, 1e-3, 0.9, 0.999, 1e-8), note="first step")
    yield Sample((*tensors((5,)), 7, 1e-2, 0.8, 0.99, 1e-6, 0.1), note="L2 weight decay")
    yield Sample((*tensors((2, 3)), 3, 1e-2, 0.9, 0.999, 1e-8, 0.01, True), note="decoupled weight decay (AdamW)")
    yield Sample((*tensors((2, 3, 2), noncontiguous=True), 2, 1e-3, 0.9, 0.999, 1e-8, 0.0, False, True),
                 note="maximize, non-contiguous")
    yield Sample((*tensors(()),  4, 0.1, 0.5, 0.5, 1e-3), note="0-d")


defop("adam_step(Tensor param, Tensor grad, Tensor exp_avg, Tensor exp_avg_sq, int step, float lr, float beta1, "
      "float beta2, float eps, float weight_decay=0.0, bool decoupled_weight_decay=False, bool maximize=False)",
      "nn", kind="composite", promotion=_adam_promotion, dtypes="float", meta=_adam_meta, composite=_adam_step,
      reference=_adam_reference, samples=_adam_samples, method=False, differentiable=False,
      outputs=("param", "exp_avg", "exp_avg_sq"), domain={"exp_avg_sq": {"low": 0.0}},
      unkeyed=("step", "lr", "beta1", "beta2", "eps", "weight_decay"),  # change every step; checks ignore them
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="one Adam (or, with decoupled_weight_decay, AdamW) step of one parameter: the new parameter, "
          "exp_avg and exp_avg_sq; step counts from 1")
