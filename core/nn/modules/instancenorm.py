"""Instance normalization layers: InstanceNorm1d/2d/3d, PyTorch's layers of that name.

Each channel of each sample is standardized over its own spatial dims. The parameters and buffers are batch
norm's (``affine`` weight and bias, running statistics with ``track_running_stats``), with PyTorch's other
defaults: no affine and no running statistics.
"""
from __future__ import annotations

import warnings

from ...dispatch.ops import F
from ..lazy_paths import lazy_attributes
from .normalization import _BatchNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_BatchNorm):
    """Shared by InstanceNorm1d/2d/3d, which differ in the dims of an unbatched input (``_unbatched``)."""

    _unbatched: int = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        self._check_input_dim(input)
        channel_dim = input.ndim - self._unbatched
        if input.shape[channel_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={channel_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[channel_dim]}.")
            warnings.warn(f"input's size at dim={channel_dim} does not match num_features. You can silence this "
                          f"warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        batched = input.ndim > self._unbatched
        x = input if batched else F.unsqueeze(input, 0)
        out = F.instance_norm(x, self.weight, self.bias, self.running_mean, self.running_var,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps, False)
        return out if batched else F.squeeze(out, 0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or unbatched (C, L) inputs."""
    _dims = (2, 3)
    _unbatched = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or unbatched (C, H, W) inputs."""
    _dims = (3, 4)
    _unbatched = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _dims = (4, 5)
    _unbatched = 4


__getattr__ = lazy_attributes(__name__, ("LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"))
