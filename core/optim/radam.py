"""RAdam: Adam whose adaptive step is switched on only once the variance of its estimate is bounded."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ..tensor import Tensor
from ._updates import adam_moments, split_weight_decay
from .optimizer import Optimizer, check_betas, check_non_negative, hyperparameters


class RAdam(Optimizer):
    """``RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False)``.

    While the length of the approximated simple moving average ``rho_t`` is at most 5 (the first
    few steps), the update is plain momentum SGD; after that Adam's, scaled by the rectification
    term. State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq``.
    """

    _state_names = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return hyperparameters(group, "lr", "betas", "eps", "weight_decay",
                               flags=("decoupled_weight_decay", "maximize"))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        state["exp_avg"], state["exp_avg_sq"] = radam_update(p, grad, state["exp_avg"], state["exp_avg_sq"],
                                                             step=state["step"], **options)


def radam_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, step: int, lr: float,
                 beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
                 maximize: bool) -> tuple[Tensor, Tensor]:
    """Write one RAdam step into ``param``; return the new ``(exp_avg, exp_avg_sq)``."""
    decayed, grad = split_weight_decay(param, grad, lr=lr, weight_decay=weight_decay,
                                       decoupled=decoupled_weight_decay, maximize=maximize)
    exp_avg, exp_avg_sq = adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2 = 1.0 - beta2 ** step
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * step * beta2 ** step / bias_correction2
    step_direction = exp_avg / bias_correction1 * lr
    if rho_t > 5.0:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        step_direction = step_direction * (math.sqrt(bias_correction2) / (exp_avg_sq.sqrt() + eps)) * rect
    param.copy_(decayed - step_direction)
    return exp_avg, exp_avg_sq
