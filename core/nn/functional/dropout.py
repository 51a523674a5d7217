"""Dropout in its functional forms: elementwise (``dropout``), whole channels (``dropout1d/2d/3d``), and the
alpha dropouts that keep SELU networks self-normalizing."""
from __future__ import annotations

import warnings

from ...dispatch.ops import F
from ...dispatch.schema.binding import float_argument, tensor_argument
from ...dispatch.schema.errors import ArgumentError

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")


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
            raise ArgumentError(f"{name}: expected {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, "
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


#: SELU's negative saturation value, -scale * alpha: what alpha dropout sets dropped units to (before its affine fix)
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(name: str, input, p: float, training: bool, inplace: bool, mask_shape: tuple):
    """Dropped units take SELU's saturation value, then an affine map restores zero mean and unit variance."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _write_back(input, F.mul(input, 0.0), inplace)
    keep = F.bernoulli(F.full(mask_shape, 1.0 - p, dtype=input.dtype, device=input.device))
    a = 1.0 / ((_SELU_SATURATION ** 2 * p + 1) * (1 - p)) ** 0.5
    shift = F.add(F.mul(F.sub(keep, 1.0), _SELU_SATURATION * a), _SELU_SATURATION * a * p)
    return _write_back(input, F.add(F.mul(input, F.mul(keep, a)), shift), inplace)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for SELU networks (Klambauer et al., 2017): keeps the self-normalizing mean and variance."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels of an (N, C, *) input."""
    if training and 0 < p and input.ndim < 2:
        raise ArgumentError(f"feature_alpha_dropout: Feature dropout requires at least 2 dimensions in the input, got "
                            f"{input.ndim}-D input of shape {tuple(input.shape)}")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, mask_shape)


def _torch_level(function, inplace: bool):
    """PyTorch's ``torch.<name>(input, p, train)`` form of a functional alpha dropout, whose arguments are
    checked as PyTorch's binding checks them (``train`` a Python bool)."""
    name = function.__name__ + ("_" if inplace else "")

    def torch_function(input, p: float, train: bool):
        tensor_argument(name, "input", input, position=1)
        p = float_argument(name, "p", p, position=2)
        if train.__class__ is not bool:
            raise TypeError(f"{name}(): argument 'train' (position 3) must be bool, not {type(train).__name__}")
        return function(input, p, train, inplace)
    torch_function.__name__ = torch_function.__qualname__ = name
    torch_function.__doc__ = function.__doc__
    return torch_function


#: ``torch.dropout_``, ``torch.alpha_dropout`` and its relatives, which take ``train`` instead of ``training``
#: and ``inplace``
TORCH_FUNCTIONS = {f.__name__: f for f in (_torch_level(dropout, True),
                                           _torch_level(alpha_dropout, False), _torch_level(alpha_dropout, True),
                                           _torch_level(feature_alpha_dropout, False),
                                           _torch_level(feature_alpha_dropout, True))}
