"""Tensor arithmetic that several optimizers' updates share, written once."""
from __future__ import annotations

from ..tensor import Tensor


def descent_direction(param: Tensor, grad: Tensor, *, maximize: bool, weight_decay: float = 0.0) -> Tensor:
    """The gradient an update descends along: negated to ``maximize``, plus the L2 term
    ``weight_decay * param`` (the coupled weight decay most optimizers share)."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad + param * weight_decay
    return grad


def moving_average(average: Tensor, value: Tensor, decay: float) -> Tensor:
    """``decay * average + (1 - decay) * value``: the running means behind momentum and moment estimates."""
    return average * decay + value * (1.0 - decay)


def adam_moments(exp_avg: Tensor, exp_avg_sq: Tensor, grad: Tensor, beta1: float,
                 beta2: float) -> tuple[Tensor, Tensor]:
    """Adam's first and second moment estimates after one more gradient (Adam, NAdam, RAdam share them)."""
    return moving_average(exp_avg, grad, beta1), moving_average(exp_avg_sq, grad * grad, beta2)


def split_weight_decay(param: Tensor, grad: Tensor, *, lr: float, weight_decay: float, decoupled: bool,
                       maximize: bool) -> tuple[Tensor, Tensor]:
    """``(param, grad)`` after weight decay: decoupled decay shrinks the parameter by ``1 - lr * weight_decay``
    (AdamW's way), coupled decay adds ``weight_decay * param`` to the gradient (L2)."""
    if decoupled:
        grad = descent_direction(param, grad, maximize=maximize)
        if weight_decay != 0:
            param = param * (1.0 - lr * weight_decay)
        return param, grad
    return param, descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
