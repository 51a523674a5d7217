"""Adam and AdamW (Adam with decoupled weight decay)."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..dispatch.ops.optim import adam_scalars
from ..tensor import Tensor
from .optimizer import Optimizer


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, maximize=False,
    decoupled_weight_decay=False)``.

    ``weight_decay`` adds ``weight_decay * param`` to the gradient (L2), unless
    ``decoupled_weight_decay`` shrinks the parameter directly, which is AdamW.
    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq`` with amsgrad).
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if len(betas) != 2:
            raise ValueError(f"Invalid betas: expected a pair (beta1, beta2), got {betas!r}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=(float(betas[0]), float(betas[1])), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = float(group["betas"][0]), float(group["betas"][1])
        amsgrad, maximize, decoupled = group["amsgrad"], group["maximize"], group["decoupled_weight_decay"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = F.zeros_like(p)
                state["exp_avg_sq"] = F.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = F.zeros_like(p)
            state["step"] = step = state["step"] + 1
            if amsgrad:
                state["exp_avg"], state["exp_avg_sq"], state["max_exp_avg_sq"] = adam_update(
                    p, grad, state["exp_avg"], state["exp_avg_sq"], state["max_exp_avg_sq"], step=step, lr=lr,
                    beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                    decoupled_weight_decay=decoupled, maximize=maximize)
                continue
            # one op per parameter, which a backend may run as one fused kernel
            new_param, state["exp_avg"], state["exp_avg_sq"] = F.adam_step(
                p, grad, state["exp_avg"], state["exp_avg_sq"], step, lr, beta1, beta2, eps, weight_decay,
                decoupled, maximize)
            p.copy_(new_param)


class AdamW(Adam):
    """``AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *, maximize=False)``:
    Adam whose weight decay shrinks the parameters (``param *= 1 - lr * weight_decay``)
    instead of entering the moment estimates."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # a checkpoint saved by Adam must not turn AdamW's decay off
            group["decoupled_weight_decay"] = True


def adam_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
                max_exp_avg_sq: Tensor | None, *, step: int, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, decoupled_weight_decay: bool, maximize: bool):
    """Write one AMSGrad step into ``param``; return the new ``(exp_avg, exp_avg_sq, max_exp_avg_sq)``.

    Plain Adam runs the ``adam_step`` op instead, which backends may fuse; AMSGrad's extra state
    keeps it on this composition of tensor ops. The bias corrections fold into two scalars as there.
    """
    if maximize:
        grad = -grad
    if weight_decay != 0 and not decoupled_weight_decay:
        grad = grad + param * weight_decay
    exp_avg = exp_avg * beta1 + grad * (1.0 - beta1)
    exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (1.0 - beta2)
    second = exp_avg_sq
    if max_exp_avg_sq is not None:
        max_exp_avg_sq = second = max_exp_avg_sq.maximum(exp_avg_sq)
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    update = exp_avg * step_size / (second.sqrt() + eps_hat)
    if weight_decay != 0 and decoupled_weight_decay:
        param.copy_(param * (1.0 - lr * weight_decay) - update)
    else:
        param.copy_(param - update)
    return exp_avg, exp_avg_sq, max_exp_avg_sq
