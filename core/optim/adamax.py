"""Adamax: Adam with the infinity norm of past gradients in place of their root mean square."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction, moving_average
from .optimizer import Optimizer, check_betas, check_non_negative


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *, maximize=False,
    differentiable=False, capturable=False)``.

    State per parameter: ``step``, ``exp_avg`` and ``exp_inf``, the decaying maximum of ``|grad| + eps``.
    """

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = 0
                state["exp_avg"] = F.zeros_like(p)
                state["exp_inf"] = F.zeros_like(p)
            state["step"] = step = state["step"] + 1
            state["exp_avg"], state["exp_inf"] = adamax_update(
                p, grad, state["exp_avg"], state["exp_inf"], step=step, lr=float(group["lr"]),
                beta1=float(group["betas"][0]), beta2=float(group["betas"][1]), eps=float(group["eps"]),
                weight_decay=float(group["weight_decay"]), maximize=group["maximize"])


def adamax_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_inf: Tensor, *, step: int, lr: float,
                  beta1: float, beta2: float, eps: float, weight_decay: float,
                  maximize: bool) -> tuple[Tensor, Tensor]:
    """Write one Adamax step into ``param``; return the new ``(exp_avg, exp_inf)``."""
    grad = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    exp_avg = moving_average(exp_avg, grad, beta1)
    exp_inf = (exp_inf * beta2).maximum(grad.abs() + eps)
    param.copy_(param - exp_avg / exp_inf * (lr / (1.0 - beta1 ** step)))
    return exp_avg, exp_inf
