"""Adagrad: per-coordinate learning rates from the sum of all past squared gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction
from .optimizer import Optimizer, check_implementation_flags, check_non_negative, hyperparameters


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
        check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        check_implementation_flags(foreach=foreach, fused=fused, differentiable=differentiable)
        for group in self.param_groups:  # groups added later get their state on first use
            for p in group["params"]:
                if not self.state[p]:
                    self.state[p].update(self._initial_state(p, None, group))

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "sum": F.full_like(p, float(group["initial_accumulator_value"]))}

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return hyperparameters(group, "lr", "lr_decay", "weight_decay", "eps", flags=("maximize",))

    def _multi_tensor_step(self, group: dict[str, Any], entries: list, options: dict[str, Any]) -> None:
        """One ``_fused_adagrad_`` call for parameters of one device and dtype, in place."""
        states = [state for _, _, state in entries]
        F._fused_adagrad_([p for p, _, _ in entries], [g for _, g, _ in entries], [s["sum"] for s in states], [],
                          steps=[s["step"] for s in states], **options)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        state["sum"] = adagrad_update(p, grad, state["sum"], step=state["step"], **options)


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
