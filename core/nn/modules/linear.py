"""Affine layers: Identity, Linear and Bilinear, with PyTorch's parameters and initialisation."""
from __future__ import annotations

import math

from ...dispatch.ops import F
from .. import init
from ..parameter import Parameter
from ..lazy_paths import lazy_attributes
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; takes (and ignores) any arguments, so it can stand in for any layer."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b`` with W of shape (out_features, in_features).

    Initialised as PyTorch does, so that models start from the same distribution: W from
    kaiming_uniform_(a=sqrt(5)), which is U(-1/sqrt(in_features), 1/sqrt(in_features)), and b from
    that same range.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(F.empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(F.empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = init._calculate_fan_in_and_fan_out(self.weight)[0]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under PyTorch's name for the output projection of MultiheadAttention (there it opts out of
    dynamic quantization); the same layer here, so code that names or checks the class runs."""


class Bilinear(Module):
    """``y[o] = x1^T W[o] x2 + b[o]`` with W of shape (out_features, in1_features, in2_features).

    W and b start from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as in PyTorch.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(F.empty((out_features, in1_features, in2_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(F.empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__getattr__ = lazy_attributes(__name__, ("LazyLinear",))  # PyTorch's path for it; defined in .lazy
