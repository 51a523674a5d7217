"""Rprop: per-coordinate step sizes that grow while the gradient keeps its sign and shrink when it flips."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from .optimizer import Optimizer, check_non_negative


class Rprop(Optimizer):
    """``Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
    maximize=False, differentiable=False)``.

    Only the gradient's sign is used. Where it flipped, the step size shrinks by ``etas[0]`` and
    that coordinate pauses for one step; where it kept its sign, the step grows by ``etas[1]``;
    step sizes stay within ``step_sizes``. State per parameter: ``step``, ``prev`` (the last
    gradient used) and ``step_size`` (starting at ``lr``).
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_non_negative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        lr = float(group["lr"])
        start = complex(lr, lr) if p.is_complex() else lr  # a complex parameter's parts: two reals, each at lr
        return {"step": 0, "prev": F.zeros_like(p), "step_size": F.full_like(grad, start)}

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        etaminus, etaplus = (float(e) for e in group["etas"])
        step_size_min, step_size_max = (float(s) for s in group["step_sizes"])
        return dict(etaminus=etaminus, etaplus=etaplus, step_size_min=step_size_min, step_size_max=step_size_max,
                    maximize=group["maximize"])

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        state["prev"], state["step_size"] = rprop_update(p, grad, state["prev"], state["step_size"], **options)


def rprop_update(param: Tensor, grad: Tensor, prev: Tensor, step_size: Tensor, *, etaminus: float, etaplus: float,
                 step_size_min: float, step_size_max: float, maximize: bool) -> tuple[Tensor, Tensor]:
    """Write one Rprop step into ``param``; return the new ``(prev, step_size)``."""
    if maximize:
        grad = -grad
    agreement = grad * prev
    flipped = agreement < 0
    factor = F.where(agreement > 0, etaplus, F.where(flipped, etaminus, F.ones_like(grad)))
    step_size = (step_size * factor).clamp(step_size_min, step_size_max)
    grad = F.where(flipped, 0.0, grad)  # a flipped coordinate pauses for one step
    param.copy_(param - grad.sign() * step_size)
    return grad, step_size
