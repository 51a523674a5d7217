"""``F.affine_grid`` and ``F.grid_sample``, the spatial transformer pair, over the schema's
``affine_grid_generator`` and ``grid_sampler`` ops (which take PyTorch's integer mode codes)."""
from __future__ import annotations

import warnings

from ...dispatch.ops import F
from ...dispatch.schema.errors import ArgumentError

__all__ = ["affine_grid", "grid_sample"]

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _align_corners(name: str, align_corners: bool | None) -> bool:
    """None means False, with PyTorch's warning that the default changed in 1.3."""
    if align_corners is None:
        warnings.warn(f"{name}: the default align_corners=False differs from PyTorch before 1.3; pass "
                      f"align_corners explicitly to silence this warning", UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


def affine_grid(theta, size: list[int], align_corners: bool | None = None):
    """The (N, H, W, 2) or (N, D, H, W, 3) grid of normalized source coordinates that the affine maps
    ``theta`` (N, 2, 3) or (N, 3, 4) assign to each pixel of an output of ``size``."""
    return F.affine_grid_generator(theta, list(size), _align_corners("affine_grid", align_corners))


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool | None = None):
    """``input`` (N, C, H, W) or (N, C, D, H, W) sampled at ``grid``'s normalized coordinates in [-1, 1]."""
    if mode not in _MODES:
        raise ArgumentError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}")
    if padding_mode not in _PADDING_MODES:
        raise ArgumentError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got "
                            f"{padding_mode!r}")
    return F.grid_sampler(input, grid, _MODES[mode], _PADDING_MODES[padding_mode],
                          _align_corners("grid_sample", align_corners))
