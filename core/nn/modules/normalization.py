"""Normalization layers: BatchNorm1d/2d/3d, LayerNorm and GroupNorm, with PyTorch's state_dict layout.

Batch norm keeps running statistics as buffers (running_mean, running_var, num_batches_tracked) that
move towards each training batch's and replace them in evaluation mode.
"""
from __future__ import annotations

import numbers

from ...autograd.grad_mode import no_grad
from ...dispatch.dtypes import int64
from ...dispatch.ops import F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm"]


def _affine_parameters(module: Module, affine: bool, bias: bool, shape: tuple, dtype, device) -> None:
    """weight (and bias unless ``bias=False``) of ``shape`` when affine, else both registered as None."""
    module.register_parameter("weight", Parameter(F.empty(shape, dtype=dtype, device=device)) if affine else None)
    module.register_parameter("bias", Parameter(F.empty(shape, dtype=dtype, device=device))
                              if affine and bias else None)


def _reset_affine(module: Module) -> None:
    """Ones and zeros: the normalization starts as a plain standardization."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _BatchNorm(Module):
    """Shared by BatchNorm1d/2d/3d, which differ only in the input dims they accept.

    ``momentum=None`` makes the running statistics a cumulative average over all batches seen
    (the factor is 1 / num_batches_tracked); ``track_running_stats=False`` keeps no statistics and
    normalizes by the batch's own in both modes.
    """

    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, affine, bias, (num_features,), dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", F.zeros((num_features,), dtype=dtype, device=device))
            self.register_buffer("running_var", F.ones((num_features,), dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", F.zeros((), dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            with no_grad():
                F.copy_(self.num_batches_tracked, F.zeros_like(self.num_batches_tracked))

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input) -> None:
        if input.ndim not in self._dims:
            expected = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {expected} input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                F.copy_(self.num_batches_tracked, F.add(self.num_batches_tracked, 1))
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / self.num_batches_tracked.item()
        # evaluation uses the running statistics when there are any, the batch's otherwise
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs, per channel C."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs, per channel C."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs, per channel C."""
    _dims = (5,)


class LayerNorm(Module):
    """Standardizes the last ``len(normalized_shape)`` dims of each sample, then scales and shifts them
    elementwise (``elementwise_affine``; ``bias=False`` keeps only the scale)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, elementwise_affine, bias, self.normalized_shape, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Standardizes each group of ``num_channels / num_groups`` channels of each sample (batch-size
    independent, unlike batch norm), then scales and shifts per channel (``affine``)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, affine, bias, (num_channels,), dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
