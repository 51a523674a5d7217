"""Pooling layers over 1, 2 and 3 spatial dims: max (with return_indices), average, adaptive average and
adaptive max, power-average (LP), max unpooling and fractional max pooling; each a thin module over its
function in ``ember.nn.functional``."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "FractionalMaxPool2d", "FractionalMaxPool3d",
]


def _ntuple(value, n: int) -> tuple:
    """An int or a sequence -> a tuple of n values, as PyTorch stores some layers' attributes."""
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


def _single(value) -> tuple:
    return _ntuple(value, 1)


class _PoolNd(Module):
    """Shared by the window and adaptive pooling layers: ``_function`` is the layer's function in
    ``ember.nn.functional``; the repr shows the window."""

    _function = None

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPoolNd(_PoolNd):
    """The maximum of each window; ``stride`` defaults to ``kernel_size`` (non-overlapping windows)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._function(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                    self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max pooling over (N, C, L) or (C, L) input."""

    _function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max pooling over (N, C, H, W) or (C, H, W) input."""

    _function = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max pooling over (N, C, D, H, W) or (C, D, H, W) input."""

    _function = staticmethod(F.max_pool3d)


class AvgPool1d(_PoolNd):
    """The mean of each window of (N, C, L) or (C, L) input; ``count_include_pad`` counts zero padding."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)  # PyTorch keeps AvgPool1d's attributes as 1-tuples
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPoolNd(_PoolNd):
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
        return type(self)._function(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolNd):
    """Average pooling over (N, C, H, W) or (C, H, W) input."""

    _function = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """Average pooling over (N, C, D, H, W) or (C, D, H, W) input."""

    _function = staticmethod(F.avg_pool3d)


class _AdaptivePoolNd(_PoolNd):
    """Pooling to a fixed output size, whatever the input size (None keeps that dim's size)."""

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    """The mean over each adaptive bin."""

    def forward(self, input):
        return type(self)._function(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _function = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _function = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _function = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    """The maximum over each adaptive bin; ``return_indices`` also returns where each maximum was."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._function(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _function = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _function = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _function = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(_PoolNd):
    """Power-average pooling: (sum of x ** norm_type over each window) ** (1 / norm_type)."""

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._function(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _function = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _function = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _function = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(_PoolNd):
    """The partial inverse of max pooling: ``forward(input, indices, output_size=None)`` puts each value back
    at its index and zeros elsewhere."""

    _spatial = 1

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._spatial
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def forward(self, input, indices, output_size=None):
        return type(self)._function(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    _function = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _function = staticmethod(F.max_unpool2d)
    _spatial = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _function = staticmethod(F.max_unpool3d)
    _spatial = 3


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling (Graham, 2014): pseudo-random windows shrink the input to ``output_size`` or by
    ``output_ratio`` (in (0, 1)); the random samples come from the default generator unless given."""

    _function = None
    _spatial = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * self._spatial
            if not all(0 < r < 1 for r in ratios):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._function(input, self.kernel_size, self.output_size, self.output_ratio,
                                    self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _function = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _function = staticmethod(F.fractional_max_pool3d)
    _spatial = 3
