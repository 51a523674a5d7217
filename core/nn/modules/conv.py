"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with PyTorch's arguments, shapes and initialisation.

``padding_mode`` other than 'zeros' pads the input explicitly (reflect, replicate or circular) and
then convolves without padding, as PyTorch does.
"""
from __future__ import annotations

import math

from ...dispatch.ops import F
from .. import init
from ..parameter import Parameter
from ..lazy_paths import lazy_attributes
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n: int) -> tuple:
    """An int or an iterable of n ints -> a tuple of n ints (PyTorch's _single/_pair)."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    """Shared by every convolution: checks, parameters, initialisation and repr."""

    _spatial = 0
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding, dilation, groups: int,
                 bias: bool, padding_mode: str, output_padding=0, device=None, dtype=None) -> None:
        super().__init__()
        n = self._spatial
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.dilation = _tuple(dilation, n)
        self.groups = groups
        self.padding_mode = padding_mode
        self.output_padding = _tuple(output_padding, n)
        self.transposed = self._transposed
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _tuple(padding, n)
        self._reversed_padding_repeated_twice = self._explicit_padding()
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(F.empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(F.empty((out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _explicit_padding(self) -> list:
        """F.pad's argument for non-zero padding modes: (left, right) per spatial dim, last dim first."""
        if self.padding == "valid":
            return [0, 0] * self._spatial
        pads = []
        for k, d, p in zip(self.kernel_size, self.dilation,
                           self.padding if self.padding != "same" else (None,) * self._spatial):
            if p is None:  # 'same': any odd pixel goes after
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            else:
                pads.append((p, p))
        return [v for pair in reversed(pads) for v in pair]

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)), i.e. U(+-1/sqrt(fan_in)), and the bias from the same range."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = init._calculate_fan_in_and_fan_out(self.weight)[0]
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._spatial
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _padded(self, input):
        """(input, padding for the conv op): explicit padding for non-zero modes, else the op pads with zeros."""
        if self.padding_mode == "zeros":
            return input, self.padding
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), 0


class _Conv(_ConvNd):
    """Conv1d, Conv2d and Conv3d: PyTorch's constructor; forward pads (for non-zero modes) and runs ``_conv``."""

    _conv = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        input, padding = self._padded(input)
        return type(self)._conv(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L) inputs."""

    _spatial = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs."""

    _spatial = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) inputs."""

    _spatial = 3
    _conv = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """The gradient of a convolution with respect to its input ("deconvolution"): upsamples by ``stride``.

    ``forward(input, output_size)`` picks the output_padding that gives that size, since several
    output sizes map to the same input size under a strided convolution.
    """

    _transposed = True
    _conv_transpose = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be ints, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def _output_padding(self, input, output_size) -> tuple:
        if output_size is None:
            return self.output_padding
        n = self._spatial
        output_size = tuple(output_size)
        if len(output_size) not in (n, n + 1, n + 2):
            raise ValueError(f"{type(self).__name__}: output_size must have {n} or {n + 2} elements (got "
                             f"{len(output_size)})")
        output_size = output_size[-n:]
        extra = []
        for d in range(n):
            size = input.shape[input.ndim - n + d]
            smallest = ((size - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {list(output_size)}, but valid sizes range from "
                                 f"{smallest} to {largest} in dim {d} (for an input of {tuple(input.shape)[-n:]})")
            extra.append(output_size[d] - smallest)
        return tuple(extra)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._conv_transpose(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                          self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution over (N, C_in, L) or (C_in, L) inputs."""

    _spatial = 1
    _conv_transpose = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs."""

    _spatial = 2
    _conv_transpose = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) inputs."""

    _spatial = 3
    _conv_transpose = staticmethod(F.conv_transpose3d)


__getattr__ = lazy_attributes(__name__, ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
                                         "LazyConvTranspose2d", "LazyConvTranspose3d"))  # PyTorch's path; in .lazy
