"""Padding layers: Zero, Constant, Reflection, Replication and Circular padding of 1, 2 or 3 trailing dims.

Each holds its padding as PyTorch does (an int becomes the same amount on every side: 2, 4 or 6 values,
last dim first) and calls the schema's ``pad`` op with its mode.
"""
from __future__ import annotations

from collections.abc import Sequence

from ...dispatch.ops import F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _sides(padding, dims: int) -> tuple:
    """(before, after) for each of ``dims`` trailing dims, last dim first; an int pads every side alike."""
    if isinstance(padding, Sequence):
        return tuple(padding)
    return (padding,) * (2 * dims)


class _PadNd(Module):
    """A padding layer of ``_dims`` trailing dims in ``_mode``."""

    _dims: int = 1
    _mode: str = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _sides(padding, self._dims)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``."""
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``."""
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``."""
    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    """ZeroPad1d/2d/3d: constant padding whose value is always 0, shown as the padding alone."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pads the last 2 dims with zeros."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pads the last 3 dims with zeros."""


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dim with its reflection about the edge (the edge itself not repeated)."""
    _dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Pads the last 2 dims with their reflection about the edges."""
    _dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pads the last 3 dims with their reflection about the edges."""
    _dims = 3


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dim by repeating its edge values."""
    _dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Pads the last 2 dims by repeating their edge values."""
    _dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pads the last 3 dims by repeating their edge values."""
    _dims = 3


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        if input.ndim not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pads the last dim with values wrapped around from its other end."""
    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims with values wrapped around from their other ends."""
    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims with values wrapped around from their other ends."""
    _dims = 3
