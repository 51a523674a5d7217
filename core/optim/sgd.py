"""Stochastic gradient descent, optionally with (Nesterov) momentum and L2 weight decay."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction
from .optimizer import Optimizer, check_implementation_flags, hyperparameters


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
    foreach=None, differentiable=False, fused=None)``.

    With momentum the buffer starts as the first gradient and then follows
    ``buf = momentum * buf + (1 - dampening) * grad``, as in PyTorch. One ``_fused_sgd_`` call per device and
    dtype updates the group in place, unless ``foreach=False`` or ``differentiable=True``.
    """

    _counts_steps = False  # the state is the momentum buffer alone, made from the first gradient

    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        check_implementation_flags(foreach=foreach, fused=fused, differentiable=differentiable)

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return hyperparameters(group, "lr", "momentum", "dampening", "weight_decay", flags=("nesterov", "maximize"))

    def _multi_tensor_step(self, group: dict[str, Any], entries: list, options: dict[str, Any]) -> None:
        """One ``_fused_sgd_`` call; parameters whose momentum buffer is still to be made (first step) get it
        from a call of their own with ``is_first_step``, as PyTorch's foreach path clones their gradients."""
        kwargs = dict(weight_decay=options["weight_decay"], momentum=options["momentum"], lr=options["lr"],
                      dampening=options["dampening"], nesterov=options["nesterov"], maximize=options["maximize"])
        if options["momentum"] == 0:
            F._fused_sgd_([p for p, _, _ in entries], [g for _, g, _ in entries], [], is_first_step=False, **kwargs)
            return
        old = [e for e in entries if "momentum_buffer" in e[2]]
        new = [e for e in entries if "momentum_buffer" not in e[2]]
        for first, part in ((False, old), (True, new)):
            if not part:
                continue
            if first:
                for p, _, state in part:
                    state["momentum_buffer"] = F.empty_like(p)
            F._fused_sgd_([p for p, _, _ in part], [g for _, g, _ in part],
                          [state["momentum_buffer"] for _, _, state in part], is_first_step=first, **kwargs)

    def _has_state(self, state: dict[str, Any], group: dict[str, Any]) -> bool:
        return group["momentum"] == 0 or "momentum_buffer" in state

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        if options["momentum"] != 0:
            state["momentum_buffer"] = sgd_update(p, grad, state.get("momentum_buffer"), **options)
        else:  # the momentum and nesterov given are unused
            sgd_update(p, grad, None, **options)


def sgd_update(param: Tensor, grad: Tensor, momentum_buffer: Tensor | None, *, lr: float, momentum: float,
               dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> Tensor | None:
    """Write one SGD step into ``param``; return the new momentum buffer (None without momentum).

    One parameter's whole update in one function of tensors and floats, so that a
    backend-provided fused kernel could take its place.
    """
    d_p = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    if momentum != 0:
        if momentum_buffer is None:
            # never alias the caller's .grad; as in PyTorch no gradient flows into the first buffer
            momentum_buffer = d_p.detach().clone() if d_p is grad else d_p.detach()
        elif dampening == 0:
            momentum_buffer = momentum_buffer * momentum + d_p
        else:
            momentum_buffer = momentum_buffer * momentum + d_p * (1.0 - dampening)
        d_p = d_p + momentum_buffer * momentum if nesterov else momentum_buffer
    param.copy_(param - d_p * lr)
    return momentum_buffer
