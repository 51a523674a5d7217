"""Adamax: Adam with the infinity norm of past gradients in place of their root mean square."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from ._updates import descent_direction, moving_average
from .optimizer import Optimizer, check_betas, check_non_negative, hyperparameters


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *, maximize=False,
    differentiable=False, capturable=False)``.

    State per parameter: ``step``, ``exp_avg`` and ``exp_inf``, the decaying maximum of ``|grad| + eps``.
    """

    _state_names = ("exp_avg", "exp_inf")

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return hyperparameters(group, "lr", "betas", "eps", "weight_decay", flags=("maximize",))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        state["exp_avg"], state["exp_inf"] = adamax_update(p, grad, state["exp_avg"], state["exp_inf"],
                                                             step=state["step"], **options)


def adamax_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_inf: Tensor, *, step: int, lr: float,
                  beta1: float, beta2: float, eps: float, weight_decay: float,
                  maximize: bool) -> tuple[Tensor, Tensor]:
    """Write one Adamax step into ``param``; return the new ``(exp_avg, exp_inf)``."""
    grad = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    exp_avg = moving_average(exp_avg, grad, beta1)
    exp_inf = (exp_inf * beta2).maximum(grad.abs() + eps)
    param.copy_(param - exp_avg / exp_inf * (lr / (1.0 - beta1 ** step)))
    return exp_avg, exp_inf
