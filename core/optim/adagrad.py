"""Adagrad: per-coordinate learning rates from the sum of all past squared gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction
from .optimizer import Optimizer, check_implementation_flags


class Adagrad(Optimizer):
    """``Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
    foreach=None, *, maximize=False, differentiable=False, fused=None)``.

    As in PyTorch, the state (``step`` and ``sum``, the latter filled with
    ``initial_accumulator_value``) is created when the optimizer is built, so it is
    part of ``state_dict()`` from the start.
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        check_implementation_flags(foreach=foreach, fused=fused, differentiable=differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["sum"] = F.full_like(p, float(group["initial_accumulator_value"]))
        return state

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps = float(group["lr"]), float(group["lr_decay"]), float(group["eps"])
        weight_decay, maximize = float(group["weight_decay"]), group["maximize"]
        for p, grad, _ in self._params_with_grad(group):
            state = self._init_state(p, group)  # groups added later get their state on first use
            state["step"] = step = state["step"] + 1
            state["sum"] = adagrad_update(p, grad, state["sum"], step=step, lr=lr, lr_decay=lr_decay,
                                          weight_decay=weight_decay, eps=eps, maximize=maximize)


def adagrad_update(param: Tensor, grad: Tensor, state_sum: Tensor, *, step: int, lr: float, lr_decay: float,
                   weight_decay: float, eps: float, maximize: bool) -> Tensor:
    """Write one Adagrad step into ``param``; return the new ``sum``.

    One parameter's whole update in one function, so that a backend's fused kernel could take its place.
    """
    grad = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    clr = lr / (1 + (step - 1) * lr_decay)
    state_sum = state_sum + grad * grad
    param.copy_(param - grad * clr / (state_sum.sqrt() + eps))
    return state_sum
