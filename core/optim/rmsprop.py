"""RMSprop: divide the gradient by a running root mean square of recent gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction, moving_average
from .optimizer import Optimizer


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    capturable=False, foreach=None, maximize=False, differentiable=False)``.

    ``centered`` normalises by an estimate of the gradient's variance instead of its
    second moment. State per parameter: ``step``, ``square_avg``, and ``momentum_buffer``
    (momentum > 0) and ``grad_avg`` (centered), all starting at zero as in PyTorch.
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
        weight_decay, momentum = float(group["weight_decay"]), float(group["momentum"])
        centered, maximize = group["centered"], group["maximize"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = 0
                state["square_avg"] = F.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = F.zeros_like(p)
                if centered:
                    state["grad_avg"] = F.zeros_like(p)
            state["step"] += 1
            square_avg, grad_avg, buf = rmsprop_update(
                p, grad, state["square_avg"], state.get("grad_avg") if centered else None,
                state.get("momentum_buffer") if momentum > 0 else None, lr=lr, alpha=alpha, eps=eps,
                weight_decay=weight_decay, momentum=momentum, maximize=maximize)
            state["square_avg"] = square_avg
            if centered:
                state["grad_avg"] = grad_avg
            if momentum > 0:
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
