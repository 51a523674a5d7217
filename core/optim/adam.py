"""Adam and AdamW (Adam with decoupled weight decay)."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..dispatch.ops.training.optim import adam_scalars
from ..tensor import Tensor
from ._updates import adam_moments, split_weight_decay
from .optimizer import Optimizer, check_betas, check_implementation_flags, check_non_negative, hyperparameters


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None,
    maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False)``.

    ``weight_decay`` adds ``weight_decay * param`` to the gradient (L2), unless
    ``decoupled_weight_decay`` shrinks the parameter directly, which is AdamW.
    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq`` with amsgrad).
    """

    _state_names = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        check_implementation_flags(foreach=foreach, fused=fused, differentiable=differentiable)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        state = super()._initial_state(p, grad, group)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = F.zeros_like(p)
        return state

    def _options(self, group: dict[str, Any]) -> tuple[bool, bool, dict[str, Any]]:
        """``(amsgrad, composed, adam_update's keyword arguments)``."""
        # the adam_step op (a fused kernel where the backend has one) computes no gradient of its own
        composed = group["amsgrad"] or group.get("differentiable", False)
        return group["amsgrad"], composed, hyperparameters(group, "lr", "betas", "eps", "weight_decay",
                                                           flags=("decoupled_weight_decay", "maximize"))

    def _multi_tensor_step(self, group: dict[str, Any], entries: list,
                           options: tuple[bool, bool, dict[str, Any]]) -> None:
        """One ``_fused_adam_`` (``_fused_adamw_``) call for parameters of one device and dtype, in place."""
        amsgrad, _, kwargs = options
        states = [state for _, _, state in entries]
        steps = [state["step"] for state in states]
        device_steps = isinstance(steps[0], Tensor)
        op = F._fused_adamw_ if kwargs["decoupled_weight_decay"] else F._fused_adam_
        op([p for p, _, _ in entries], [g for _, g, _ in entries], [s["exp_avg"] for s in states],
           [s["exp_avg_sq"] for s in states], [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
           steps if device_steps else [], lr=kwargs["lr"], beta1=kwargs["beta1"], beta2=kwargs["beta2"],
           weight_decay=kwargs["weight_decay"], eps=kwargs["eps"], amsgrad=amsgrad, maximize=kwargs["maximize"],
           steps=() if device_steps else steps)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any],
                options: tuple[bool, bool, dict[str, Any]]) -> None:
        amsgrad, composed, kwargs = options
        if composed:
            state["exp_avg"], state["exp_avg_sq"], max_exp_avg_sq = adam_update(
                p, grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"), step=state["step"],
                **kwargs)
            if amsgrad:
                state["max_exp_avg_sq"] = max_exp_avg_sq
            return
        # one op per parameter, which a backend may run as one fused kernel
        new_param, state["exp_avg"], state["exp_avg_sq"] = F.adam_step(
            p, grad, state["exp_avg"], state["exp_avg_sq"], state["step"], kwargs["lr"], kwargs["beta1"],
            kwargs["beta2"], kwargs["eps"], kwargs["weight_decay"], kwargs["decoupled_weight_decay"],
            kwargs["maximize"])
        p.copy_(new_param)


class AdamW(Adam):
    """``AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *, maximize=False,
    foreach=None, capturable=False, differentiable=False, fused=None)``:
    Adam whose weight decay shrinks the parameters (``param *= 1 - lr * weight_decay``)
    instead of entering the moment estimates."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # a checkpoint saved by Adam must not turn AdamW's decay off
            group["decoupled_weight_decay"] = True


def adam_update(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
                max_exp_avg_sq: Tensor | None, *, step: int, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, decoupled_weight_decay: bool, maximize: bool):
    """Write one Adam step into ``param``; return the new ``(exp_avg, exp_avg_sq, max_exp_avg_sq)``.

    AMSGrad (``max_exp_avg_sq`` given) and differentiable steps run this composition of tensor ops;
    plain Adam runs the ``adam_step`` op, which backends may fuse. The bias corrections fold into two
    scalars as there.
    """
    decayed, grad = split_weight_decay(param, grad, lr=lr, weight_decay=weight_decay,
                                       decoupled=decoupled_weight_decay, maximize=maximize)
    exp_avg, exp_avg_sq = adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
    second = exp_avg_sq
    if max_exp_avg_sq is not None:
        max_exp_avg_sq = second = max_exp_avg_sq.maximum(exp_avg_sq)
    step_size, eps_hat = adam_scalars(step, lr, beta1, beta2, eps)
    param.copy_(decayed - exp_avg * step_size / (second.sqrt() + eps_hat))
    return exp_avg, exp_avg_sq, max_exp_avg_sq
