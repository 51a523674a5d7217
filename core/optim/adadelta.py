"""Adadelta: steps scaled by the ratio of running RMS of past updates to running RMS of gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from ._updates import descent_direction, moving_average
from .optimizer import Optimizer, check_non_negative, hyperparameters


class Adadelta(Optimizer):
    """``Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
    maximize=False, differentiable=False)``.

    State per parameter: ``step``, ``square_avg`` (of gradients) and ``acc_delta`` (of updates).
    """

    _state_names = ("square_avg", "acc_delta")

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_non_negative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return hyperparameters(group, "lr", "rho", "eps", "weight_decay", flags=("maximize",))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        state["square_avg"], state["acc_delta"] = adadelta_update(p, grad, state["square_avg"], state["acc_delta"],
                                                                  **options)


def adadelta_update(param: Tensor, grad: Tensor, square_avg: Tensor, acc_delta: Tensor, *, lr: float, rho: float,
                    eps: float, weight_decay: float, maximize: bool) -> tuple[Tensor, Tensor]:
    """Write one Adadelta step into ``param``; return the new ``(square_avg, acc_delta)``."""
    grad = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    square_avg = moving_average(square_avg, grad * grad, rho)
    delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
    acc_delta = moving_average(acc_delta, delta * delta, rho)
    param.copy_(param - delta * lr)
    return square_avg, acc_delta
