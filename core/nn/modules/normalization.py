"""Normalization layers: BatchNorm1d/2d/3d, LayerNorm and GroupNorm, with PyTorch's state_dict layout.

Batch norm keeps running statistics as buffers (running_mean, running_var, num_batches_tracked) that
move towards each training batch's and replace them in evaluation mode.
"""
from __future__ import annotations

import numbers

from ...autograd.grad_mode import no_grad
from ...dispatch.schema.dtypes import int64
from ...dispatch.ops import F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "LocalResponseNorm", "CrossMapLRN2d",
           "RMSNorm", "SyncBatchNorm"]


def _as_shape(normalized_shape) -> tuple:
    """LayerNorm's and RMSNorm's ``normalized_shape``: an int is the size of the last dim alone."""
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


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
                return self._cumulative_average(input)
        # evaluation uses the running statistics when there are any, the batch's otherwise
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def _cumulative_average(self, input):
        """momentum=None in training: the running statistics become the average over every batch so far, each
        updated with factor 1 / num_batches_tracked as PyTorch does, but computed on the device: reading the
        count to the host would stall the device at every step. A batch_norm with momentum 1 into fresh
        buffers yields this batch's mean and unbiased variance, which are then blended in."""
        mean, var = F.zeros_like(self.running_mean), F.ones_like(self.running_var)
        out = F.batch_norm(input, mean, var, self.weight, self.bias, True, 1.0, self.eps)
        with no_grad():
            factor = F.reciprocal(F.to_dtype(self.num_batches_tracked, mean.dtype))
            keep = F.rsub(factor, 1)
            for running, batch in ((self.running_mean, mean), (self.running_var, var)):
                F.copy_(running, F.add(F.mul(running, keep), F.mul(batch, factor)))
        return out

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
        self.normalized_shape = _as_shape(normalized_shape)
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


class LocalResponseNorm(Module):
    """Divides each value by (k + alpha * the mean square over ``size`` neighbouring channels) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """Lua Torch's cross-channel LRN of 4-D inputs, kept for compatibility. Its channel window is the one PyTorch's
    running-sum implementation produces: ``pre_pad - 1`` channels on either side (``pre_pad = (size - 1) / 2 + 1``),
    and, once a window has moved past it, still channel 0, which that running sum never subtracts."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def _window(self, channels: int, device):
        reach = int((self.size - 1) / 2 + 1) - 1
        index = F.arange(channels, device=device)
        c, j = F.unsqueeze(index, 1), F.unsqueeze(index, 0)
        band = F.logical_and(F.le(j, F.add(c, reach)), F.logical_or(F.ge(j, F.sub(c, reach)), F.eq(j, 0)))
        return band  # band[c, j]: channel j counts towards channel c

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        band = F.to_dtype(self._window(input.shape[1], input.device), input.dtype)
        squares = F.permute(F.mul(input, input), (0, 2, 3, 1))
        window = F.permute(F.matmul(squares, F.transpose(band, 0, 1)), (0, 3, 1, 2))
        return F.mul(input, F.pow(F.add(F.mul(window, self.alpha / self.size), self.k), -self.beta))


class RMSNorm(Module):
    """Root-mean-square normalization over the last ``len(normalized_shape)`` dims (no centering), scaled
    elementwise by a learned weight; ``eps=None`` is the machine epsilon of the dtype it computes in."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", Parameter(F.empty(self.normalized_shape, dtype=dtype, device=device))
                                if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def _world_size(process_group) -> int:
    """Ranks that share batch statistics: 1 unless an ember.distributed process group is initialised."""
    from ... import distributed
    if not distributed.is_initialized():
        return 1
    return distributed.get_world_size(process_group)


def _all_reduce_sum(tensor, process_group):
    """The sum of ``tensor`` over the group's ranks, differentiable: its gradient is the sum of the ranks'
    gradients, which is what each rank's share of the global statistics needs."""
    from ... import distributed
    from ...autograd import Function

    class AllReduceSum(Function):
        @staticmethod
        def forward(ctx, local):
            total = F.clone(local)
            distributed.all_reduce(total, group=process_group)
            return total

        @staticmethod
        def backward(ctx, grad):
            total = F.clone(grad)
            distributed.all_reduce(total, group=process_group)
            return total

    return AllReduceSum.apply(tensor)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose training statistics are those of the whole global batch: under an initialised
    ``ember.distributed`` process group each rank's per-channel sums are all-reduced. With one process (or in
    evaluation) it is plain batch normalization."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training or _world_size(self.process_group) == 1:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                F.copy_(self.num_batches_tracked, F.add(self.num_batches_tracked, 1))
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()
        return self._synchronized(input, factor)

    def _synchronized(self, input, momentum: float):
        channels, dims = input.shape[1], (0,) + tuple(range(2, input.ndim))
        count = F.full((1,), float(input.numel() // channels), dtype=input.dtype, device=input.device)
        local = F.cat([F.sum(input, dims), F.sum(F.mul(input, input), dims), count])
        total = _all_reduce_sum(local, self.process_group)
        n = total[2 * channels].item()
        if n <= 1:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel when training, got {int(n)} "
                             f"over all ranks")
        mean = F.div(F.slice(total, 0, 0, channels), n)
        var = F.sub(F.div(F.slice(total, 0, channels, 2 * channels), n), F.mul(mean, mean))
        if self.running_mean is not None:
            with no_grad():
                F.copy_(self.running_mean, F.add(F.mul(self.running_mean, 1 - momentum), F.mul(mean, momentum)))
                F.copy_(self.running_var, F.add(F.mul(self.running_var, 1 - momentum),
                                                F.mul(var, momentum * n / (n - 1))))
        shape = (1, channels) + (1,) * (input.ndim - 2)
        out = F.mul(F.sub(input, F.reshape(mean, shape)), F.reshape(F.rsqrt(F.add(var, self.eps)), shape))
        if self.weight is not None:
            out = F.mul(out, F.reshape(self.weight, shape))
        if self.bias is not None:
            out = F.add(out, F.reshape(self.bias, shape))
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every BatchNorm*d in it replaced by a SyncBatchNorm sharing its parameters and
        running statistics (instance norms are left alone)."""
        converted = module
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm)):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            for name in ("weight", "bias"):
                converted.register_parameter(name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                converted.register_buffer(name, getattr(module, name))
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
