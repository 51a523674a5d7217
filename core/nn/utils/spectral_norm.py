"""``nn.utils.spectral_norm`` / ``remove_spectral_norm``: the older hook form of spectral normalization.

``<name>_orig`` (parameter) and buffers ``<name>_u``, ``<name>_v`` replace ``<name>``; a forward pre-hook
sets ``module.<name> = <name>_orig / sigma``, running the power iteration in training mode only.
"""
from __future__ import annotations

from ...autograd import no_grad
from ..modules.module import Module
from ..parameter import Parameter
from ._norms import as_matrix, normalized, random_unit, remove_norm_hook

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def compute_weight(self, module: Module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = as_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                detached = matrix.detach()
                for _ in range(self.n_power_iterations):  # v first, then u: this form's order
                    v.copy_(normalized(detached.T @ u, self.eps))
                    u.copy_(normalized(detached @ v, self.eps))
        u, v = u.clone(), v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            height, width = as_matrix(weight, dim).shape
            u, v = random_unit(height, weight, eps), random_unit(width, weight, eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False).detach()
        object.__delattr__(module, self.name)
        del module._buffers[self.name + "_u"]
        del module._buffers[self.name + "_v"]
        del module._parameters[self.name + "_orig"]
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm before every forward (hook form)."""
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Store the normalized weight as a plain parameter ``<name>`` again."""
    return remove_norm_hook(module, SpectralNorm, name, "spectral_norm")
