"""Pooling layers: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over the nn ops."""
from __future__ import annotations

from ...dispatch.ops import F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]


class MaxPool2d(Module):
    """The maximum of each window; ``stride`` defaults to ``kernel_size`` (non-overlapping windows)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        if return_indices:
            raise NotImplementedError("MaxPool2d: return_indices=True is not supported")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """The mean of each window; ``count_include_pad`` counts zero padding in the divisor."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size, whatever the input size (None keeps that dim's size)."""

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
