"""NAdam: Adam with Nesterov momentum, whose momentum coefficient warms up over the first steps."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import adam_moments, split_weight_decay
from .optimizer import Optimizer, check_betas, check_non_negative, hyperparameters


class NAdam(Optimizer):
    """``NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False, differentiable=False)``.

    The momentum coefficient of step t is ``beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``; the
    running product of those coefficients is the state ``mu_product`` (a Python float), beside ``step``,
    ``exp_avg`` and ``exp_avg_sq``. ``decoupled_weight_decay`` makes it NAdamW.
    """

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "mu_product": 1.0, "exp_avg": F.zeros_like(p), "exp_avg_sq": F.zeros_like(p)}

    def _options(self, group: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """``(momentum_decay, nadam_update's other keyword arguments)``."""
        return float(group["momentum_decay"]), hyperparameters(group, "lr", "betas", "eps", "weight_decay",
                                                               flags=("decoupled_weight_decay", "maximize"))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: tuple[float, dict[str, Any]]) -> None:
        momentum_decay, kwargs = options
        step, beta1 = state["step"], kwargs["beta1"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        state["mu_product"] = mu_product = float(state["mu_product"]) * mu
        state["exp_avg"], state["exp_avg_sq"] = nadam_update(
            p, grad, state["exp_avg"], state["exp_avg_sq"], step=step, mu=mu, mu_next=mu_next, mu_product=mu_product,
            **kwargs)


def nadam_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, step: int, mu: float,
                 mu_next: float, mu_product: float, lr: float, beta1: float, beta2: float, eps: float,
                 weight_decay: float, decoupled_weight_decay: bool, maximize: bool) -> tuple[Tensor, Tensor]:
    """Write one NAdam step into ``param``; return the new ``(exp_avg, exp_avg_sq)``.

    The step mixes the current gradient (weight ``1 - mu``) with the momentum of the next step
    (weight ``mu_next``), each divided by its bias correction, over Adam's denominator.
    """
    decayed, grad = split_weight_decay(param, grad, lr=lr, weight_decay=weight_decay,
                                       decoupled=decoupled_weight_decay, maximize=maximize)
    exp_avg, exp_avg_sq = adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
    denom = (exp_avg_sq / (1.0 - beta2 ** step)).sqrt() + eps
    grad_weight = lr * (1.0 - mu) / (1.0 - mu_product)
    momentum_weight = lr * mu_next / (1.0 - mu_product * mu_next)
    param.copy_(decayed - grad * grad_weight / denom - exp_avg * momentum_weight / denom)
    return exp_avg, exp_avg_sq
