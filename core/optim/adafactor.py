"""Adafactor: Adam-like steps whose second-moment estimate of a matrix is stored as a row and a column factor."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from .optimizer import Optimizer, hyperparameters

#: Machine epsilon per floating dtype, the default ``eps[0]`` (PyTorch's ``finfo(dtype).eps``).
_MACHINE_EPSILON = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


class Adafactor(Optimizer):
    """``Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
    foreach=None, maximize=False)``.

    For a parameter of two or more dimensions the state keeps ``row_var`` and ``col_var`` (means of
    the squared gradient over the last and the second-to-last dimension), otherwise ``variance``;
    beside ``step``. The relative step size is ``min(lr, 1 / sqrt(step))``, scaled by the
    parameter's RMS (at least ``eps[1]``); updates whose RMS exceeds ``d`` are clipped; weight decay
    is decoupled (``param *= 1 - lr * weight_decay``). ``eps[0]`` (None: the dtype's machine epsilon)
    keeps the variance estimate away from zero.
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        if grad.dim() > 1:
            return {"step": 0, "row_var": F.zeros_like(grad.mean(dim=-1, keepdim=True)),
                    "col_var": F.zeros_like(grad.mean(dim=-2, keepdim=True))}
        return {"step": 0, "variance": F.zeros_like(grad)}

    def _options(self, group: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
        """``(eps[0], adafactor_update's other keyword arguments)``: eps[0] may depend on the parameter's dtype."""
        eps1, eps2 = group["eps"]
        return eps1, dict(hyperparameters(group, "lr", "beta2_decay", "d", "weight_decay", flags=("maximize",)),
                          eps2=float(eps2))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any],
                options: tuple[float | None, dict[str, Any]]) -> None:
        eps1, kwargs = options
        state.update(adafactor_update(
            p, grad, state.get("row_var"), state.get("col_var"), state.get("variance"), step=state["step"],
            eps1=_MACHINE_EPSILON[p.dtype.name] if eps1 is None else float(eps1), **kwargs))


def _rms(t: Tensor) -> float:
    return t.norm().item() / math.sqrt(t.numel())


def adafactor_update(param: Tensor, grad: Tensor, row_var: Tensor | None, col_var: Tensor | None,
                     variance: Tensor | None, *, step: int, lr: float, beta2_decay: float, eps1: float, eps2: float,
                     d: float, weight_decay: float, maximize: bool) -> dict[str, Tensor]:
    """Write one Adafactor step into ``param``; return the new variance state (``row_var`` and ``col_var``
    for a factored parameter, ``variance`` otherwise)."""
    if maximize:
        grad = -grad
    one_minus_beta2 = step ** beta2_decay
    alpha = max(eps2, _rms(param)) * min(lr, 1.0 / math.sqrt(step))
    decayed = param * (1.0 - lr * weight_decay) if weight_decay != 0 else param
    squared = grad * grad
    if row_var is not None and col_var is not None:
        row_var = row_var.lerp(squared.mean(dim=-1, keepdim=True), one_minus_beta2)
        col_var = col_var.lerp(squared.mean(dim=-2, keepdim=True), one_minus_beta2)
        estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
        new_state = {"row_var": row_var, "col_var": col_var}
    else:
        variance = estimate = variance.lerp(squared, one_minus_beta2)
        new_state = {"variance": variance}
    update = estimate.clamp(min=eps1 * eps1).rsqrt() * grad
    clip = max(1.0, _rms(update) / d)
    param.copy_(decayed - update * (alpha / clip))
    return new_state
