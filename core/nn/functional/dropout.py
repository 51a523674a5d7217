"""Dropout in its functional forms: elementwise (``dropout``) and whole channels (``dropout1d/2d/3d``)."""
from __future__ import annotations

import warnings

from ...dispatch.ops import F

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d"]


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _write_back(input, out, inplace: bool):
    """``inplace=True`` writes the result into input (autograd refuses that on a leaf, as PyTorch does)."""
    return F.copy_(input, out) if inplace and out is not input else out


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zeroes each element with probability p and scales the survivors by 1 / (1 - p), so that the
    expected value is unchanged and evaluation needs no rescaling. The identity when not training, and
    (as PyTorch's CPU path) for p = 0: no numbers are drawn."""
    _check_p(p)
    if not training or p == 0:
        return input
    return _write_back(input, F.dropout(input, p, True), inplace)


def _channel_dropout(name: str, spatial: int):
    def channel_dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
        _check_p(p)
        if input.ndim not in (spatial + 1, spatial + 2):
            raise ValueError(f"{name}: expected {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, "
                             f"got {input.ndim}-D input of shape {tuple(input.shape)}")
        if not training:
            return input
        kept = input.ndim - spatial  # dims that get their own draw: (N, C) or (C,)
        if spatial == 2 and input.ndim == 3:
            warnings.warn("dropout2d: Received a 3D input, which is treated as (N, C, L) and dropped channel-wise "
                          "as dropout1d does, for compatibility with PyTorch; use dropout1d for such inputs, or "
                          "add a batch dim to a (C, H, W) input", UserWarning, stacklevel=2)
            kept = 2
        mask_shape = tuple(input.shape[:kept]) + (1,) * (input.ndim - kept)
        if p == 1.0:
            return _write_back(input, F.mul(input, 0.0), inplace)
        keep = F.bernoulli(F.full(mask_shape, 1.0 - p, dtype=input.dtype, device=input.device))
        return _write_back(input, F.mul(input, F.mul(keep, 1.0 / (1.0 - p))), inplace)
    channel_dropout.__name__ = channel_dropout.__qualname__ = name
    channel_dropout.__doc__ = (f"Zeroes whole channels of an (N, C, {spatial} spatial dims) input with probability "
                               f"p, scaling the rest by 1 / (1 - p): neighbouring values are correlated, so "
                               f"dropping them one by one would regularise little.")
    return channel_dropout


dropout1d = _channel_dropout("dropout1d", 1)
dropout2d = _channel_dropout("dropout2d", 2)
dropout3d = _channel_dropout("dropout3d", 3)
