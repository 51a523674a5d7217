"""``F.unfold`` and ``F.fold``: PyTorch's names for the schema's ``im2col`` and ``col2im``.

The ops keep PyTorch's internal names because ``unfold`` is already ``Tensor.unfold`` (one dim's sliding
windows as a view), a different operation.
"""
from __future__ import annotations

from ...dispatch.ops import F

__all__ = ["unfold", "fold"]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of a (N, C, H, W) or (C, H, W) image as columns: (N, C * prod(kernel_size), L)."""
    return F.im2col(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns of sliding blocks (N, C * prod(kernel_size), L) summed into an (N, C, *output_size) image."""
    return F.col2im(input, output_size, kernel_size, dilation, padding, stride)
