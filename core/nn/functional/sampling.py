"""``interpolate`` (and its deprecated aliases ``upsample*``): resizing along the spatial dimensions, with
PyTorch's coordinate formulas.

Every mode here is separable, so the resize is done one spatial dimension at a time: compute, for each
output position, which input positions it reads and with what weights (small 1-D tensors), then gather
along that dimension with ``index_select`` and blend. The gathers and blends are ordinary Ember ops, so the
result runs on any backend and differentiates without a hand-written backward.
"""
from __future__ import annotations

import math
import warnings

from ...dispatch.schema.dtypes import float32, float64, int64
from ...dispatch.schema.errors import ArgumentError, ShapeError
from ...dispatch.ops import F
from ...dispatch.ops.nn.resampling import cubic_weights

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODES = {  # mode -> the input ranks (3: N,C,L; 4: N,C,H,W; 5: N,C,D,H,W) PyTorch accepts it for
    "nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "linear": (3,), "bilinear": (4,), "bicubic": (4,),
    "trilinear": (5,), "area": (3, 4, 5),
}


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False):
    """Resize ``input`` (``N, C, *spatial`` with 1 to 3 spatial dimensions) to ``size`` or by ``scale_factor``.

    Modes: ``nearest`` (PyTorch's legacy rule, ``floor(dst * in/out)``), ``nearest-exact`` (pixel centres),
    ``linear`` / ``bilinear`` / ``trilinear`` for 3-, 4- and 5-D input, ``bicubic`` (4-D) and ``area``
    (adaptive average pooling). ``align_corners`` (linear and cubic modes only) maps the corner pixels onto
    each other instead of the pixel edges. When ``scale_factor`` is given the sampling uses ``1/scale_factor``
    as PyTorch does, unless ``recompute_scale_factor=True`` asks for ``in/out`` of the rounded size.
    """
    if mode not in _MODES:
        raise ArgumentError(f"interpolate: mode must be one of {', '.join(_MODES)}; got '{mode}'")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if input.ndim not in _MODES[mode]:
        ranks = " or ".join(f"{r}-D" for r in _MODES[mode])
        raise ShapeError(f"interpolate: mode '{mode}' expects {ranks} input (N, C, spatial...), got shape "
                         f"{tuple(input.shape)}")
    interpolating = mode in ("linear", "bilinear", "bicubic", "trilinear")
    if align_corners is not None and not interpolating:
        raise ArgumentError("interpolate: align_corners can only be set with the interpolating modes "
                            "linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    in_sizes = tuple(input.shape[2:])
    out_sizes, scales = _output_sizes(in_sizes, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        return _area(input, out_sizes)

    compute = float64 if input.dtype is float64 else float32  # PyTorch's opmath type
    x = input if input.dtype in (float32, float64) or mode.startswith("nearest") else F.to_dtype(input, compute)
    for i, (n_in, n_out, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + i
        if mode == "nearest":
            x = F.index_select(x, dim, _nearest_index(n_in, n_out, scale, x.device, exact=False))
        elif mode == "nearest-exact":
            x = F.index_select(x, dim, _nearest_index(n_in, n_out, scale, x.device, exact=True))
        elif mode == "bicubic":
            x = _blend(x, dim, *_cubic_taps(n_in, n_out, scale, align_corners, compute, x.device))
        else:
            x = _blend(x, dim, *_linear_taps(n_in, n_out, scale, align_corners, compute, x.device))
    return x if x.dtype is input.dtype else F.to_dtype(x, input.dtype)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None):
    """Deprecated alias of ``interpolate`` (PyTorch warns the same way)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _output_sizes(in_sizes: tuple, size, scale_factor, recompute_scale_factor):
    """The output spatial sizes, and the scales (or None) the coordinate formulas receive."""
    n = len(in_sizes)
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate: give exactly one of size or scale_factor")
    if size is not None:
        sizes = _per_dim("size", size, n)
        if any(int(s) != s or s <= 0 for s in sizes):
            raise ArgumentError(f"interpolate: output sizes must be positive integers, got {size}")
        return tuple(int(s) for s in sizes), (None,) * n
    factors = tuple(float(f) for f in _per_dim("scale_factor", scale_factor, n))
    sizes = tuple(math.floor(s * f) for s, f in zip(in_sizes, factors))
    if any(s <= 0 for s in sizes):
        raise ArgumentError(f"interpolate: scale_factor {scale_factor} gives an empty output for input size {in_sizes}")
    return sizes, ((None,) * n if recompute_scale_factor else factors)


def _per_dim(name: str, value, n: int) -> tuple:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ArgumentError(f"interpolate: {name} must have {n} elements for {n} spatial dimensions, got {value}")
        return tuple(value)
    return (value,) * n


def _source_scale(n_in: int, n_out: int, scale, align_corners: bool) -> float:
    """How far apart, in input pixels, consecutive output pixels sample (PyTorch's area_pixel_compute_scale)."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _nearest_index(n_in: int, n_out: int, scale, device, exact: bool):
    """Input index per output index: ``floor(dst * s)`` (legacy) or ``floor((dst + 0.5) * s)`` (exact).

    Computed in float32, as PyTorch's kernels do, so ties round the same way. (PyTorch's CPU kernel for 4-D
    input alone skips the formula when the output is exactly 1x or 2x the input, which differs only for odd
    factors such as 1.1 on 7 pixels; this follows the formula, like its 3-D and 5-D kernels.)
    """
    step = _source_scale(n_in, n_out, scale, align_corners=False)
    position = F.arange(n_out, dtype=float32, device=device)
    if exact:
        position = F.add(position, 0.5)
    index = F.to_dtype(F.floor(F.mul(position, step)), int64)
    return F.clamp(index, max=n_in - 1)


def _source_positions(n_in: int, n_out: int, scale, align_corners: bool, cubic: bool, dtype, device):
    """Fractional input coordinate of each output pixel, and its floor and fraction (guard_index_and_lambda)."""
    step = _source_scale(n_in, n_out, scale, align_corners)
    position = F.arange(n_out, dtype=dtype, device=device)
    if align_corners:
        position = F.mul(position, step)
    else:
        position = F.sub(F.mul(F.add(position, 0.5), step), 0.5)
        if not cubic:
            position = F.clamp(position, min=0.0)
    index = F.clamp(F.floor(position), max=n_in - 1)
    fraction = F.clamp(F.sub(position, index), 0.0, 1.0)
    return F.to_dtype(index, int64), fraction


def _linear_taps(n_in: int, n_out: int, scale, align_corners: bool, dtype, device):
    index, fraction = _source_positions(n_in, n_out, scale, align_corners, False, dtype, device)
    upper = F.clamp(F.add(index, 1), max=n_in - 1)
    return [index, upper], [F.sub(1.0, fraction), fraction]


def _cubic_taps(n_in: int, n_out: int, scale, align_corners: bool, dtype, device):
    """Four taps around each position with Keys' cubic weights; taps past the border repeat the edge pixel."""
    index, t = _source_positions(n_in, n_out, scale, align_corners, True, dtype, device)
    taps = [F.clamp(F.add(index, offset), 0, n_in - 1) for offset in (-1, 0, 1, 2)]
    return taps, cubic_weights(t)


def _blend(x, dim: int, indices: list, weights: list):
    """``sum_k x[..., indices[k], ...] * weights[k]`` along ``dim``: each tap a gather and a scaled add."""
    trailing = (1,) * (x.ndim - dim - 1)
    out = None
    for index, weight in zip(indices, weights):
        weight = F.reshape(F.to_dtype(weight, x.dtype), (-1,) + trailing)
        term = F.mul(F.index_select(x, dim, index), weight)
        out = term if out is None else F.add(out, term)
    return out


def _area(input, out_sizes: tuple):
    """Area resizing is adaptive average pooling over the same number of spatial dims."""
    return getattr(F, f"adaptive_avg_pool{len(out_sizes)}d")(input, out_sizes)
