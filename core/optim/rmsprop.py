"""RMSprop: divide the gradient by a running root mean square of recent gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction, moving_average
from .optimizer import Optimizer, check_non_negative, hyperparameters


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    capturable=False, foreach=None, maximize=False, differentiable=False)``.

    ``centered`` normalises by an estimate of the gradient's variance instead of its
    second moment. State per parameter: ``step``, ``square_avg``, and ``momentum_buffer``
    (momentum > 0) and ``grad_avg`` (centered), all starting at zero as in PyTorch.
    """

    _state_names = ("square_avg",)

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        state = super()._initial_state(p, grad, group)
        if float(group["momentum"]) > 0:
            state["momentum_buffer"] = F.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = F.zeros_like(p)
        return state

    def _options(self, group: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """``(centered, rmsprop_update's keyword arguments)``."""
        return group["centered"], hyperparameters(group, "lr", "alpha", "eps", "weight_decay", "momentum",
                                                  flags=("maximize",))

    def _multi_tensor_step(self, group: dict[str, Any], entries: list, options: tuple[bool, dict[str, Any]]) -> None:
        """One ``_fused_rmsprop_`` call for parameters of one device and dtype, in place."""
        centered, kwargs = options
        states = [state for _, _, state in entries]
        F._fused_rmsprop_([p for p, _, _ in entries], [g for _, g, _ in entries], [s["square_avg"] for s in states],
                          [s["grad_avg"] for s in states] if centered else [],
                          [s["momentum_buffer"] for s in states] if kwargs["momentum"] > 0 else [],
                          centered=centered, **kwargs)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: tuple[bool, dict[str, Any]]) -> None:
        centered, kwargs = options
        has_momentum = kwargs["momentum"] > 0
        state["square_avg"], grad_avg, buf = rmsprop_update(
            p, grad, state["square_avg"], state.get("grad_avg") if centered else None,
            state.get("momentum_buffer") if has_momentum else None, **kwargs)
        if centered:
            state["grad_avg"] = grad_avg
        if has_momentum:
            state["momentum_buffer"] = buf


def rmsprop_update(param: Tensor, grad: Tensor, square_avg: Tensor, grad_avg: Tensor | None,
                   momentum_buffer: Tensor | None, *, lr: float, alpha: float, eps: float, weight_decay: float,
                   momentum: float, maximize: bool):
    """Write one RMSprop step into ``param``; return the new ``(square_avg, grad_avg, momentum_buffer)``.

    ``grad_avg`` is None unless centered, ``momentum_buffer`` None unless momentum > 0.
    One parameter's whole update in one function, so that a backend's fused kernel could take its place.
    """
    grad = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    square_avg = moving_average(square_avg, grad * grad, alpha)
    if grad_avg is not None:
        grad_avg = moving_average(grad_avg, grad, alpha)
        avg = (square_avg - grad_avg * grad_avg).sqrt() + eps
    else:
        avg = square_avg.sqrt() + eps
    if momentum_buffer is not None:
        momentum_buffer = momentum_buffer * momentum + grad / avg
        param.copy_(param - momentum_buffer * lr)
    else:
        param.copy_(param - grad * lr / avg)
    return square_avg, grad_avg, momentum_buffer
