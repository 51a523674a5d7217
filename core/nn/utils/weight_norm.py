"""``nn.utils.weight_norm`` / ``remove_weight_norm``: the older hook form of weight normalization.

Parameters ``<name>_g`` and ``<name>_v`` replace ``<name>``, which a forward pre-hook recomputes before
every call; PyTorch deprecates this form for ``parametrizations.weight_norm`` and so warns here.
"""
from __future__ import annotations

import warnings

from ..modules.module import Module
from ..parameter import Parameter
from ._norms import norm_except_dim, remove_norm_hook, weight_from_g_v

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook: sets ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module):
        return weight_from_g_v(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        object.__setattr__(module, name, fn.compute_weight(module))
        fn.handle = module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module).detach()
        object.__delattr__(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into magnitude ``<name>_g`` and direction ``<name>_v`` (deprecated in PyTorch
    for ``nn.utils.parametrizations.weight_norm``)."""
    warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of "
                  "torch.nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Fold ``<name>_g`` and ``<name>_v`` back into one parameter ``<name>``."""
    return remove_norm_hook(module, WeightNorm, name, "weight_norm")
