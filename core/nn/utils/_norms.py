"""What weight and spectral normalization share: the arithmetic of their parametrization and hook forms, and
taking the hook form off a module."""
from __future__ import annotations

from ...dispatch.ops import F as ops
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..modules.module import Module


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dimension but ``dim``, kept as size-1 dims; over all of ``v`` (a 0-d
    tensor) when ``dim`` is -1 (PyTorch's convention, which weight_norm's ``dim=None`` maps to)."""
    if dim == -1:
        return (v * v).sum().sqrt()
    others = tuple(d for d in range(v.ndim) if d != dim)
    return (v * v).sum(dim=others, keepdim=True).sqrt() if others else v.abs()


def weight_from_g_v(g: Tensor, v: Tensor, dim: int) -> Tensor:
    """``v * (g / ||v||)``: direction from ``v``, magnitude from ``g`` (per slice along ``dim``)."""
    return v * (g / norm_except_dim(v, dim))


def as_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` with ``dim`` moved to the front and the rest flattened: the matrix whose spectral norm is used."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def normalized(x: Tensor, eps: float) -> Tensor:
    return F.normalize(x, dim=0, eps=eps)


def random_unit(length: int, like: Tensor, eps: float) -> Tensor:
    """A random unit vector (standard normal, normalized) of ``like``'s dtype and device."""
    return normalized(init.normal_(ops.empty((length,), dtype=like.dtype, device=like.device)), eps)


def remove_norm_hook(module: Module, hook_type: type, name: str, function_name: str) -> Module:
    """Undo ``<function_name>(module, name)``: the ``hook_type`` forward pre-hook of ``name`` restores a plain
    parameter and is dropped."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{function_name} of '{name}' not found in {type(module).__name__}")
