"""The Tensor properties that see complex numbers: ``real`` and ``imag``, which PyTorch lets one read (views) and
assign (writes into them), and the conjugate transposes ``H`` and ``mH`` (the plain ones of ``transposes``,
conjugated)."""
from __future__ import annotations

from ..dispatch.ops import F
from . import Tensor, transposes


def get_real(self: Tensor) -> Tensor:
    """The real parts as a view (a real tensor is its own real part)."""
    return F.real(self)


def set_real(self: Tensor, value) -> None:
    """``x.real = value`` writes value (broadcast, cast) into the real parts of x."""
    F.real(self).copy_(value)


def get_imag(self: Tensor) -> Tensor:
    """The imaginary parts as a view; refused for real tensors, as PyTorch does."""
    return F.imag(self)


def set_imag(self: Tensor, value) -> None:
    F.imag(self).copy_(value)


def _conjugated(t: Tensor) -> Tensor:
    """``t``'s conjugate; a real tensor itself, without an op call (``.mH`` is common on real matrices)."""
    return F.conj(t) if t.dtype.is_complex else t


def hermitian(self: Tensor) -> Tensor:
    """``H``: the conjugate transpose of a matrix."""
    return _conjugated(transposes.hermitian(self))


def matrix_adjoint(self: Tensor) -> Tensor:
    """``mH``: the last two dims swapped, conjugated."""
    return _conjugated(transposes.matrix_adjoint(self))
