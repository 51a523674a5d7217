"""``ember.autograd.forward_ad``: dual tensors for forward-mode AD (``torch.autograd.forward_ad``).

Inside ``with dual_level():``, ``make_dual(x, t)`` gives a tensor whose tangent is ``t``; every op on it gives
its outputs tangents by the op's JVP rule (``OpDef.jvp``), and ``unpack_dual(y)`` reads ``(primal, tangent)``.
The level is a dispatch mode of ``ember.func`` (``ember.func.dual``); tangents vanish when it exits.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, NamedTuple

from ..dispatch.execution.modes import standing_aside
from ..dispatch.ops import F
from ..tensor import Tensor

_current: list = []  # the entered level, with the context that keeps it: at most one, as in PyTorch


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view of the dual tensor) and its tangent (or None)."""
    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enter a new forward level and return its number; prefer ``with dual_level():``."""
    from ..func import dual
    if _current:
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. Make sure you "
                           "did not modified it. Nested forward mode AD is not supported at the moment.")
    context = dual.entered()
    mode = context.__enter__()
    _current.append((mode, context))
    return mode.level


def exit_dual_level(*, level: int | None = None) -> None:
    """Leave the current forward level; its tangents are dropped."""
    if not _current or (level is not None and _current[-1][0].level != level):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This "
                           "is not supported.")
    mode, context = _current.pop()
    mode.clear()
    context.__exit__(None, None, None)


@contextmanager
def dual_level() -> Iterator[int]:
    """A forward-AD level for the block: dual tensors made in it carry tangents through every op."""
    level = enter_dual_level()
    try:
        yield level
    finally:
        exit_dual_level(level=level)


def _level(level: int | None):
    if not _current:
        if level is None:
            return None
        raise RuntimeError("Trying to use a forward AD level that does not exist. Enter one with "
                           "ember.autograd.forward_ad.dual_level()")
    mode = _current[-1][0]
    if level is not None and level != mode.level:
        raise RuntimeError(f"Trying to use forward AD level {level}, but the current level is {mode.level}")
    return mode


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` whose tangent at the current level is ``tangent`` (same shape and dtype)."""
    mode = _level(level)
    if mode is None:
        raise RuntimeError("To create a dual Tensor, you must first enter a dual level with "
                           "ember.autograd.forward_ad.dual_level() (make_dual)")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual expects Tensors, got {type(tensor).__name__} and {type(tangent).__name__}")
    if not tensor.dtype.is_inexact:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.dtype.is_inexact:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"Expected tangent on the primal's device {tensor.device}, got {tangent.device}")
    if tangent.dtype is not tensor.dtype:
        tangent = F.to_dtype(tangent, tensor.dtype)
    with standing_aside(mode):
        dual = F.view(tensor, tuple(tensor.shape))
    mode.set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a dual tensor; the tangent is None where it has none (or no level is entered)."""
    mode = _level(level)
    if mode is None:
        return UnpackedDualTensor(tensor, None)
    tangent = mode.tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with standing_aside(mode):
        primal = F.view(tensor, tuple(tensor.shape))
    return UnpackedDualTensor(primal, tangent)


__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]
