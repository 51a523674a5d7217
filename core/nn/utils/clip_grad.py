"""Gradient clipping: rescale (by the total norm) or clamp (elementwise) the gradients of parameters in place.

PyTorch's algorithm and its ``foreach`` switch: the gradients are grouped by device and dtype, and each group
takes one multi-tensor op (``_foreach_norm``, ``_foreach_mul_``, ``_foreach_clamp_min_``/``_max_``) where
``foreach`` is None or True, or an op per gradient where it is False. Nothing is read to the host unless
``error_if_nonfinite=True`` asks for a check of the total norm.
"""
from __future__ import annotations

import math
import types
import warnings
import weakref
from typing import Iterable, Union

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F
from ...dispatch.schema.dtypes import float32
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

Tensors = Union[Tensor, Iterable[Tensor]]

# Parameters that are one rank's piece of a tensor sharded across ranks (FSDP's shards): their part of the
# norm is combined over the ranks holding the other pieces. id -> (weak reference, combine), where
# ``combine(value, op)`` all-reduces a scalar in place with op "sum" or "max".
_sharded: dict[int, tuple] = {}


def register_sharded(param: Tensor, combine) -> None:
    """Mark ``param`` as a shard: ``clip_grad_norm_`` combines its gradient's norm across ranks."""
    key = id(param)
    _sharded[key] = (weakref.ref(param, lambda _, key=key: _sharded.pop(key, None)), combine)


def _combine_of(param: Tensor):
    entry = _sharded.get(id(param))
    return entry[1] if entry is not None and entry[0]() is param else None


def _as_list(tensors: Tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters: list) -> list:
    return [p.grad for p in parameters if p.grad is not None]


def _by_device_and_dtype(tensors: list) -> list[list]:
    """The tensors in groups of one device and dtype, each group in the given order, the groups in the order
    of their first tensors (PyTorch's ``_group_tensors_by_device_and_dtype``). Read once per tensor and
    step, so the attributes are read directly rather than through their properties."""
    groups: dict[tuple, list] = {}
    for t in tensors:
        groups.setdefault((t._device, t._dtype), []).append(t)
    return list(groups.values())


def get_total_norm(tensors: Tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The norm of all tensors together, as if concatenated: the norm of their norms (the max for inf).

    Each tensor's norm is computed on its own device; the result is on the first tensor's device."""
    tensors = _as_list(tensors)
    if not tensors:
        return F.zeros(())
    return _total_norm(_by_device_and_dtype(tensors), float(norm_type), error_if_nonfinite, foreach)


def _total_norm(groups: list[list], norm_type: float, error_if_nonfinite: bool, foreach: bool | None) -> Tensor:
    first_device = groups[0][0].device
    with no_grad():
        norms: list = []
        for group in groups:
            group_norms = (F._foreach_norm(group, norm_type) if foreach is not False
                           else [F.norm(g, norm_type) for g in group])
            if group[0].device != first_device:
                group_norms = [n.to(first_device) for n in group_norms]
            norms.extend(group_norms)
        total = F.norm(F.stack(norms), norm_type)
    _check_finite(total, norm_type, error_if_nonfinite)
    return total


def _check_finite(total: Tensor, norm_type: float, error_if_nonfinite: bool) -> None:
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")


def clip_grads_with_norm_(parameters: Tensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), in place: never scaled up."""
    grads = _grads(_as_list(parameters))
    if grads:
        _scale(_by_device_and_dtype(grads), float(max_norm), total_norm, foreach)


def _scale(groups: list[list], max_norm: float, total_norm: Tensor, foreach: bool | None) -> None:
    with no_grad():
        factor = F.clamp(F.div(max_norm, F.add(total_norm, 1e-6)), None, 1.0)
        for group in groups:
            device = group[0].device
            on_device = factor if factor.device == device else factor.to(device)
            if foreach is not False:
                F._foreach_mul_(group, on_device)
            else:
                for g in group:
                    g.mul_(on_device)


def clip_grad_norm_(parameters: Tensors, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Rescale the gradients so that their total norm is at most ``max_norm``; returns the norm before
    clipping (useful to log). Directions are kept, which is why clipping by norm is the usual choice.
    ``get_total_norm`` then ``clip_grads_with_norm_``, the gradients grouped once for both."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = _grads(parameters)
    if not grads:
        return F.zeros(())
    groups = _by_device_and_dtype(grads)
    combine = next((c for c in map(_combine_of, parameters) if c is not None), None) if _sharded else None
    if combine is None:
        total = _total_norm(groups, float(norm_type), error_if_nonfinite, foreach)
    else:
        total = _sharded_total_norm(parameters, float(norm_type), combine, error_if_nonfinite, foreach)
    _scale(groups, float(max_norm), total, foreach)
    return total


def _sharded_total_norm(parameters: list, norm_type: float, combine, error_if_nonfinite: bool,
                        foreach: bool | None) -> Tensor:
    """The total norm when some parameters are shards: their norms' share (the max, or the sum of p-th
    powers) combined across ranks, then joined with the norm of the whole parameters."""
    sharded = [p.grad for p in parameters if p.grad is not None and _combine_of(p) is not None]
    whole = [p.grad for p in parameters if p.grad is not None and _combine_of(p) is None]
    device = parameters[0].grad.device if parameters[0].grad is not None else sharded[0].device
    with no_grad():
        shares = [_total_norm(_by_device_and_dtype(g), norm_type, False, foreach).to(device, float32)
                  if g else F.zeros((), device=device) for g in (sharded, whole)]
        if math.isinf(norm_type):
            combine(shares[0], "max")
            total = F.maximum(shares[0], shares[1])
        else:
            part = F.pow(shares[0], norm_type)
            combine(part, "sum")
            total = F.pow(F.add(part, F.pow(shares[1], norm_type)), 1.0 / norm_type)
    _check_finite(total, norm_type, error_if_nonfinite)
    return total


def clip_grad_value_(parameters: Tensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for group in _by_device_and_dtype(_grads(_as_list(parameters))):
            if foreach is not False:
                F._foreach_clamp_min_(group, -clip_value)
                F._foreach_clamp_max_(group, clip_value)
            else:
                for g in group:
                    g.clamp_(-clip_value, clip_value)
