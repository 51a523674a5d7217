"""Flatten and Unflatten: reshape layers for use inside Sequential."""
from __future__ import annotations

from ...dispatch.ops import F
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Merges dims start_dim..end_dim into one; the default keeps the batch dim, as between conv and linear."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size`` (a tuple or list of ints; one may be -1)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)) or \
                not all(isinstance(s, int) and not isinstance(s, bool) for s in unflattened_size):
            raise TypeError(f"unflattened_size must be a tuple or list of ints, got {unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return F.unflatten(input, self.dim, tuple(self.unflattened_size))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
