"""Muon: momentum SGD whose update is orthogonalized by a Newton–Schulz iteration, for 2-D weights."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ..dispatch.schema.dtypes import bfloat16
from ..dispatch.ops import F
from ..tensor import Tensor
from .optimizer import Optimizer, hyperparameters

ADJUST_LR_FNS = ("original", "match_rms_adamw")


def zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float], ns_steps: int,
                               eps: float) -> Tensor:
    """An approximately orthogonal matrix with ``grad``'s singular vectors (``U S' V^T``, ``S'`` near 1).

    As PyTorch, the quintic iteration ``X <- a X + (b A + c A^2) X`` with ``A = X X^T`` runs in bfloat16 on
    the wide orientation of ``grad``, after scaling it to Frobenius norm 1 (so the spectral norm is <= 1).
    """
    if ns_steps >= 100:
        raise ValueError("Muon: number of Newton-Schulz steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError(f"Muon: the gradient must be a 2D matrix, got shape {tuple(grad.shape)}")
    if len(ns_coefficients) != 3:
        raise ValueError("Muon: ns_coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.to(bfloat16)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):  # each product-and-sum rounds to bfloat16 once, as a bfloat16 addmm does
        wide = x.float()
        gram = (wide @ wide.T).to(bfloat16).float()
        mixed = (b * gram + c * (gram @ gram)).to(bfloat16).float()
        x = (a * wide + mixed @ wide).to(bfloat16)
    return x.T if tall else x


def adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """``original``: ``lr * sqrt(max(1, rows / cols))``; ``match_rms_adamw``: ``lr * 0.2 * sqrt(max(rows, cols))``."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))


class Muon(Optimizer):
    """``Muon(params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, ns_coefficients=(3.4445, -4.775,
    2.0315), eps=1e-07, ns_steps=5, adjust_lr_fn=None)``: only for 2-D parameters, as in PyTorch.

    Per step: ``buf = lerp(buf, g, 1 - momentum)``; the update is ``lerp(g, buf, momentum)`` (nesterov) or
    ``buf``, orthogonalized; the parameter decays by ``1 - lr * weight_decay`` and moves by the adjusted lr.
    """

    _counts_steps = False  # the state is the momentum buffer alone

    def __init__(self, params: Iterable, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                 eps: float = 1e-07, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        for label, value in (("Learning rate", lr), ("momentum", momentum), ("weight decay", weight_decay)):
            if not value >= 0.0:
                raise ValueError(f"Muon: {label} should be >= 0 but is: {value}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ADJUST_LR_FNS:
            raise ValueError(f"Muon: adjust learning rate function {adjust_lr_fn} is not supported; expected None "
                             f"or one of {', '.join(ADJUST_LR_FNS)}")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{tuple(p.shape)}")

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        return {"momentum_buffer": F.zeros_like(grad)}

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return dict(hyperparameters(group, "lr", "momentum", "weight_decay", "eps", flags=("nesterov", "adjust_lr_fn")),
                    ns_coefficients=tuple(group["ns_coefficients"]), ns_steps=int(group["ns_steps"]))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        lr, momentum, buf = options["lr"], options["momentum"], state["momentum_buffer"]
        buf.copy_(buf.lerp(grad, 1 - momentum))
        update = grad.lerp(buf, momentum) if options["nesterov"] else buf
        update = zeropower_via_newtonschulz(update, options["ns_coefficients"], options["ns_steps"], options["eps"])
        p.copy_(p * (1 - lr * options["weight_decay"]) - adjust_lr(lr, options["adjust_lr_fn"], p.shape)
                * update.to(p.dtype))
