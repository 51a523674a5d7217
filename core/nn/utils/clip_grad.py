"""Gradient clipping: rescale (by the total norm) or clamp (elementwise) the gradients of parameters in place."""
from __future__ import annotations

import math

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters) -> list:
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The norm of all tensors together, as if concatenated: the norm of their norms (max for inf).

    Each tensor's norm is computed on its own device; the result is on the first tensor's device.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return F.zeros(())
    with no_grad():
        device = tensors[0].device
        norms = [F.to_dtype(F.norm(t, norm_type), tensors[0].dtype).to(device) for t in tensors]
        total = F.norm(F.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), in place: never scaled up."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        factor = F.clamp(F.div(float(max_norm), F.add(total_norm, 1e-6)), None, 1.0)
        for g in grads:
            F.copy_(g, F.mul(g, F.to_dtype(factor.to(g.device), g.dtype)))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Rescale the gradients so that their total norm is at most ``max_norm``; returns the norm before
    clipping (useful to log). Directions are kept, which is why clipping by norm is the usual choice."""
    parameters = _as_list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            F.copy_(g, F.clamp(g, -clip_value, clip_value))
