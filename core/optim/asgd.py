"""ASGD: SGD with a decaying step size that also keeps a running average of the iterates."""
from __future__ import annotations

from typing import Any, Iterable

from ..dispatch.ops import F
from ..tensor import Tensor
from ._updates import descent_direction
from .optimizer import Optimizer, check_non_negative, hyperparameters


class ASGD(Optimizer):
    """``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
    differentiable=False, capturable=False)``.

    Each step shrinks the parameter by ``1 - lambd * eta`` and descends by ``eta * grad``; the
    step size then becomes ``eta = lr / (1 + lambd * lr * t) ** alpha``. From step ``t0`` on,
    ``ax`` averages the iterates (``mu = 1 / max(1, t - t0)``); before that it copies them.
    State per parameter: ``step``, ``eta`` and ``mu`` (Python floats) and ``ax``.
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_non_negative(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "eta": float(group["lr"]), "mu": 1.0, "ax": F.zeros_like(p)}

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return hyperparameters(group, "lr", "lambd", "alpha", "t0", "weight_decay", flags=("maximize",))

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: dict[str, Any]) -> None:
        step, lr, lambd = state["step"], options["lr"], options["lambd"]
        state["ax"] = asgd_update(p, grad, state["ax"], eta=float(state["eta"]), mu=float(state["mu"]), lambd=lambd,
                                  weight_decay=options["weight_decay"], maximize=options["maximize"])
        state["eta"] = lr / (1.0 + lambd * lr * step) ** options["alpha"]
        state["mu"] = 1.0 / max(1.0, step - options["t0"])


def asgd_update(param: Tensor, grad: Tensor, ax: Tensor, *, eta: float, mu: float, lambd: float,
                weight_decay: float, maximize: bool) -> Tensor:
    """Write one ASGD step into ``param``; return the new average ``ax``."""
    grad = descent_direction(param, grad, maximize=maximize, weight_decay=weight_decay)
    param.copy_(param * (1.0 - lambd * eta) - grad * eta)
    if mu != 1.0:
        return ax + (param - ax) * mu
    return param.clone()
