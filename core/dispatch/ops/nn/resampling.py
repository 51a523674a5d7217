"""Rearranging and resampling pixels: pixel (un)shuffle, channel shuffle, im2col / col2im (``F.unfold`` /
``F.fold``), and the spatial transformer pair ``affine_grid_generator`` / ``grid_sampler``.

All are composites in Ember ops, so every backend runs them. The shuffles are a reshape, a permute and a
reshape. im2col is a view of the sliding windows made contiguous; col2im, its adjoint, sums every column entry
back onto the pixel it came from with one ``scatter_add``; each declares the other as its derivative, as in
PyTorch. ``grid_sampler`` gathers the 2**n corner pixels around each sampling point from the flattened image
and blends them with the (differentiable) interpolation weights, so gradients reach both input and grid.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from ..elementwise.opmath import in_opmath
from .spatial import at_least, expand_attr, int_tuple, sliding_windows, with_batch, without_batch
from ...schema.errors import ArgumentError


# -- pixel_shuffle / pixel_unshuffle ---------------------------------------------------------------------------

def _shuffle_check(op_name: str, x, factor: int) -> None:
    require(len(shape(x)) >= 3, op_name, f"expects input to have at least 3 dimensions, got {len(shape(x))}", x)
    if factor <= 0:
        raise ArgumentError(f"{op_name}: the factor must be positive, got {factor}")


def _pixel_shuffle_meta(x, upscale_factor):
    _shuffle_check("pixel_shuffle", x, upscale_factor)
    *lead, c, h, w = shape(x)
    r = upscale_factor
    require(c % (r * r) == 0, "pixel_shuffle", f"the channel dim (size {c}) must be divisible by the square of "
            f"upscale_factor={r}", x)
    return tuple(lead) + (c // (r * r), h * r, w * r)


def _pixel_shuffle(x, upscale_factor):
    """(*, C r r, H, W) -> (*, C, r, r, H, W) -> (*, C, H, r, W, r) -> (*, C, H r, W r)."""
    r, lead = upscale_factor, tuple(x.shape[:-3])
    c, h, w = x.shape[-3:]
    k = len(lead)
    split = F.reshape(x, lead + (c // (r * r), r, r, h, w))
    order = tuple(range(k)) + tuple(k + i for i in (0, 3, 1, 4, 2))
    return F.reshape(F.permute(split, order), lead + (c // (r * r), h * r, w * r))


def _pixel_shuffle_reference(x, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = x.shape
    out = np.empty((*lead, c // (r * r), h * r, w * r), x.dtype)
    for i, j in np.ndindex(r, r):  # output pixel (y r + i, x r + j) of channel o is input channel o r r + i r + j
        out[..., i::r, j::r] = x[..., i * r + j::r * r, :, :]
    return out


def _pixel_unshuffle_meta(x, downscale_factor):
    _shuffle_check("pixel_unshuffle", x, downscale_factor)
    *lead, c, h, w = shape(x)
    r = downscale_factor
    require(h % r == 0 and w % r == 0, "pixel_unshuffle", f"height {h} and width {w} must be divisible by "
            f"downscale_factor={r}", x)
    return tuple(lead) + (c * r * r, h // r, w // r)


def _pixel_unshuffle(x, downscale_factor):
    """(*, C, H r, W r) -> (*, C, H, r, W, r) -> (*, C, r, r, H, W) -> (*, C r r, H, W)."""
    r, lead = downscale_factor, tuple(x.shape[:-3])
    c, h, w = x.shape[-3:]
    k = len(lead)
    split = F.reshape(x, lead + (c, h // r, r, w // r, r))
    order = tuple(range(k)) + tuple(k + i for i in (0, 2, 4, 1, 3))
    return F.reshape(F.permute(split, order), lead + (c * r * r, h // r, w // r))


def _pixel_unshuffle_reference(x, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = x.shape
    out = np.empty((*lead, c * r * r, h // r, w // r), x.dtype)
    for i, j in np.ndindex(r, r):
        out[..., i * r + j::r * r, :, :] = x[..., i::r, j::r]
    return out


def _pixel_shuffle_samples(make, dtype):
    yield Sample((make((2, 8, 3, 2)), 2))
    yield Sample((make((9, 2, 2), noncontiguous=True), 3), note="unbatched")
    yield Sample((make((2, 1, 4, 2, 3)), 2), note="two leading dims")


def _pixel_unshuffle_samples(make, dtype):
    yield Sample((make((2, 2, 6, 4)), 2))
    yield Sample((make((1, 6, 3), noncontiguous=True), 3), note="unbatched")
    yield Sample((make((2, 1, 2, 4, 2)), 2), note="two leading dims")


defop("pixel_shuffle(Tensor input, int upscale_factor)", "nn", kind="composite", promotion=rules.passthrough,
      meta=_pixel_shuffle_meta, composite=_pixel_shuffle, reference=_pixel_shuffle_reference,
      samples=_pixel_shuffle_samples, method=False,
      doc="(*, C r^2, H, W) -> (*, C, H r, W r): sub-pixel convolution's rearrangement of channels into pixels")
defop("pixel_unshuffle(Tensor input, int downscale_factor)", "nn", kind="composite", promotion=rules.passthrough,
      meta=_pixel_unshuffle_meta, composite=_pixel_unshuffle, reference=_pixel_unshuffle_reference,
      samples=_pixel_unshuffle_samples, method=False,
      doc="(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle")


# -- channel_shuffle ------------------------------------------------------------------------------------------

def _channel_shuffle_meta(op_name: str):
    def meta(x, groups):
        require(len(shape(x)) > 2, op_name, f"expects input with > 2 dims, got {len(shape(x))}", x)
        if groups <= 0:
            raise ArgumentError(f"{op_name}: groups must be positive, got groups={groups}")
        require(shape(x)[1] % groups == 0, op_name, f"the number of channels ({shape(x)[1]}) must be divisible "
                f"by groups={groups}", x)
        return shape(x)
    return meta


def _channel_shuffle(x, groups):
    """(N, g, C/g, *) with the two channel dims swapped: channel i of group j moves to position i g + j."""
    n, c, rest = x.shape[0], x.shape[1], tuple(x.shape[2:])
    split = F.reshape(x, (n, groups, c // groups) + rest)
    return F.reshape(F.transpose(split, 1, 2), tuple(x.shape))


def _channel_shuffle_reference(x, groups):
    n, c = x.shape[:2]
    return np.ascontiguousarray(np.swapaxes(x.reshape((n, groups, c // groups) + x.shape[2:]), 1, 2)).reshape(x.shape)


def _channel_shuffle_samples(make, dtype):
    yield Sample((make((2, 6, 3)), 3))
    yield Sample((make((1, 4, 2, 3), noncontiguous=True), 2))
    yield Sample((make((2, 4, 1, 2, 2)), 4), note="5-D, one channel per group")


_SHUFFLE_DOC = "channels regrouped as ShuffleNet does: (N, g, C/g, *) transposed to (N, C/g, g, *)"
defop("channel_shuffle(Tensor input, int groups)", "nn", kind="composite", promotion=rules.passthrough,
      meta=_channel_shuffle_meta("channel_shuffle"), composite=_channel_shuffle,
      reference=_channel_shuffle_reference, samples=_channel_shuffle_samples, method=False, doc=_SHUFFLE_DOC)
defop("native_channel_shuffle(Tensor input, int groups)", "nn", kind="composite", promotion=rules.passthrough,
      meta=_channel_shuffle_meta("native_channel_shuffle"), composite=_channel_shuffle,
      reference=_channel_shuffle_reference, samples=_channel_shuffle_samples, method=False,
      doc=_SHUFFLE_DOC + " (PyTorch's native form of channel_shuffle)")


# -- im2col / col2im (F.unfold / F.fold) ----------------------------------------------------------------------

_WINDOW_ATTRS = (("kernel_size", 1), ("dilation", 1), ("padding", 0), ("stride", 1))  # name, smallest value


def _window_normalize(op, args):
    """Each of kernel_size, dilation, padding and stride -> a pair, within PyTorch's limits."""
    for name, low in _WINDOW_ATTRS:
        args[name] = at_least(op.name, name, int_tuple(op.name, name, args[name], 2), low)
    if "output_size" in args:
        args["output_size"] = at_least(op.name, "output_size", int_tuple(op.name, "output_size",
                                                                          args["output_size"], 2), 1)


def _blocks(op_name: str, size: tuple, kernel_size, dilation, padding, stride, *operands) -> tuple:
    """How many window positions fit along each spatial dim (PyTorch calls their product L)."""
    blocks = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                   for n, k, d, p, s in zip(size, kernel_size, dilation, padding, stride))
    require(all(b > 0 for b in blocks), op_name, f"the padded input of spatial size {tuple(size)} is too small for "
            f"kernel_size={kernel_size} with dilation={dilation} and padding={padding}: no block fits", *operands)
    return blocks


def _im2col_meta(x, kernel_size, dilation, padding, stride):
    in_shape = shape(x)
    require(len(in_shape) in (3, 4) and all(in_shape[-3:]), "im2col", "expected a 3-D (C, H, W) or 4-D "
            "(N, C, H, W) input with non-zero channels and spatial sizes", x)
    blocks = _blocks("im2col", in_shape[-2:], kernel_size, dilation, padding, stride, x)
    return in_shape[:-3] + (in_shape[-3] * kernel_size[0] * kernel_size[1], blocks[0] * blocks[1])


def _im2col(x, kernel_size, dilation, padding, stride):
    """Every (dilated) window flattened to a column: (N, C, H, W) -> (N, C kh kw, L)."""
    x, batched = with_batch(x, 2)
    (ph, pw) = padding
    if ph or pw:
        x = F.pad(x, (pw, pw, ph, ph))
    windows = sliding_windows(x, kernel_size, stride, dilation)  # (N, C, OH, OW, kh, kw)
    n, c, oh, ow = windows.shape[:4]
    columns = F.reshape(F.permute(windows, (0, 1, 4, 5, 2, 3)), (n, c * kernel_size[0] * kernel_size[1], oh * ow))
    return without_batch(columns, batched)


def _im2col_reference(x, kernel_size, dilation=1, padding=0, stride=1):
    kh, kw = expand_attr(kernel_size, 2)
    (dh, dw), (ph, pw), (sh, sw) = (expand_attr(a, 2) for a in (dilation, padding, stride))
    batched = x.ndim == 4
    x = np.pad(x if batched else x[None], [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    n, c, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    out = np.empty((n, c, kh, kw, oh, ow), x.dtype)
    for i, j in np.ndindex(kh, kw):
        out[:, :, i, j] = x[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
    out = out.reshape(n, c * kh * kw, oh * ow)
    return out if batched else out[0]


def _col2im_meta(x, output_size, kernel_size, dilation, padding, stride):
    in_shape = shape(x)
    require(len(in_shape) in (2, 3) and all(in_shape[-2:]), "col2im", "expected a 2-D (C kh kw, L) or 3-D "
            "(N, C kh kw, L) input with non-zero sizes", x)
    taps = kernel_size[0] * kernel_size[1]
    require(in_shape[-2] % taps == 0, "col2im", f"dim -2 (size {in_shape[-2]}) must be divisible by the product "
            f"of kernel_size={kernel_size}", x)
    blocks = _blocks("col2im", output_size, kernel_size, dilation, padding, stride, x)
    require(in_shape[-1] == blocks[0] * blocks[1], "col2im", f"output_size={output_size} with "
            f"kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride} has "
            f"{blocks[0] * blocks[1]} blocks, but the input has {in_shape[-1]} (dim -1)", x)
    return in_shape[:-2] + (in_shape[-2] // taps,) + tuple(output_size)


def _col2im(x, output_size, kernel_size, dilation, padding, stride):
    """Each column entry added onto the pixel of the padded image it was read from, then the padding cropped."""
    batched = x.ndim == 3
    cols = x if batched else F.unsqueeze(x, 0)
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = output_size, kernel_size, dilation, padding, stride
    oh, ow = _blocks("col2im", output_size, kernel_size, dilation, padding, stride)
    height, width = h + 2 * ph, w + 2 * pw
    n, c = cols.shape[0], cols.shape[1] // (kh * kw)
    device = x.device
    rows = F.add(F.unsqueeze(F.mul(F.arange(kh, device=device), dh), 1), F.mul(F.arange(oh, device=device), sh))
    columns = F.add(F.unsqueeze(F.mul(F.arange(kw, device=device), dw), 1), F.mul(F.arange(ow, device=device), sw))
    # flat position in the padded plane of entry (i, j, y, x): (i dh + y sh) * width + j dw + x sw
    where = F.add(F.mul(F.reshape(rows, (kh, 1, oh, 1)), width), F.reshape(columns, (1, kw, 1, ow)))
    index = F.expand(F.reshape(where, (1, 1, -1)), (n, c, kh * kw * oh * ow))
    plane = F.zeros((n, c, height * width), dtype=x.dtype, device=device)
    plane = F.scatter_add(plane, 2, index, F.reshape(cols, (n, c, kh * kw * oh * ow)))
    image = F.slice(F.slice(F.reshape(plane, (n, c, height, width)), 2, ph, ph + h), 3, pw, pw + w)
    return image if batched else F.squeeze(image, 0)


def _col2im_reference(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    (h, w), (kh, kw) = expand_attr(output_size, 2), expand_attr(kernel_size, 2)
    (dh, dw), (ph, pw), (sh, sw) = (expand_attr(a, 2) for a in (dilation, padding, stride))
    batched = x.ndim == 3
    x = np.asarray(x, np.float64) if batched else np.asarray(x, np.float64)[None]
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    n, c = x.shape[0], x.shape[1] // (kh * kw)
    cols = x.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    for i, j in np.ndindex(kh, kw):
        out[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += cols[:, :, i, j]
    out = out[:, :, ph:ph + h, pw:pw + w]
    return out if batched else out[0]


def _im2col_samples(make, dtype):
    yield Sample((make((2, 3, 4, 5)), (2, 3)))
    yield Sample((make((1, 2, 6, 5)), 2), {"dilation": (2, 1), "padding": 1, "stride": (2, 3)})
    yield Sample((make((2, 5, 4), noncontiguous=True), 3), {"padding": (1, 0)}, note="unbatched")


def _col2im_samples(make, dtype):
    yield Sample((make((2, 12, 9)), (4, 5), (2, 3)), note="3 x 3 blocks")
    yield Sample((make((1, 8, 6)), (6, 5), 2), {"dilation": (2, 1), "padding": 1, "stride": (2, 3)},
                 note="3 x 2 blocks")
    yield Sample((make((18, 3), noncontiguous=True), (3, 3), 3), {"padding": (1, 0)}, note="unbatched")


defop("im2col(Tensor input, int[] kernel_size, int[] dilation=1, int[] padding=0, int[] stride=1)", "nn",
      kind="composite", promotion=rules.same, dtypes="float", meta=_im2col_meta, normalize=_window_normalize,
      composite=_im2col, reference=_im2col_reference, samples=_im2col_samples, method=False,
      derivative={"input": lambda grad, input, kernel_size, dilation, padding, stride:
                  F.col2im(grad, tuple(input.shape[-2:]), kernel_size, dilation, padding, stride)},
      doc="the sliding (dilated, strided) windows of a padded image as columns, (N, C kh kw, L): F.unfold")
defop("col2im(Tensor input, int[] output_size, int[] kernel_size, int[] dilation=1, int[] padding=0, "
      "int[] stride=1)", "nn", kind="composite", promotion=rules.same, dtypes="float", meta=_col2im_meta,
      normalize=_window_normalize, composite=_col2im, reference=_col2im_reference, samples=_col2im_samples,
      method=False,
      derivative={"input": lambda grad, kernel_size, dilation, padding, stride:
                  F.im2col(grad, kernel_size, dilation, padding, stride)},
      doc="columns of windows summed back into an image of output_size, overlaps adding up: F.fold, the adjoint "
          "of im2col")


# -- affine_grid_generator ------------------------------------------------------------------------------------

def _affine_grid_meta(theta, size, align_corners):
    n = len(size) - 2
    if n not in (2, 3):
        raise ArgumentError(f"affine_grid: size must be (N, C, H, W) or (N, C, D, H, W), got size={list(size)}")
    require(shape(theta) == (size[0], n, n + 1), "affine_grid", f"expected theta of shape ({size[0]}, {n}, "
            f"{n + 1}) for size={list(size)}", theta)
    require(all(s > 0 for s in size), "affine_grid", f"size must be positive, got size={list(size)}", theta)
    return (size[0],) + tuple(size[2:]) + (n,)


def _base_coordinates(steps: int, align_corners: bool, dtype, device):
    """``steps`` points across [-1, 1]: the pixel corners (align_corners) or centres; one pixel sits at 0."""
    if steps <= 1:
        return F.zeros((max(steps, 0),), dtype=dtype, device=device)
    points = F.linspace(-1.0, 1.0, steps, dtype=dtype, device=device)
    return points if align_corners else F.mul(points, (steps - 1) / steps)


def _affine_grid(theta, size, align_corners):
    """The base grid of homogeneous coordinates (x, y[, z], 1), one row per output pixel, times theta^T."""
    spatial = tuple(size[2:])
    n = len(spatial)
    axes = []  # x varies along the last spatial dim, y along the one before, z along the first of three
    for k in range(n):
        dim = n - 1 - k
        coordinate = _base_coordinates(spatial[dim], align_corners, theta.dtype, theta.device)
        view = [1] * n
        view[dim] = spatial[dim]
        axes.append(F.expand(F.reshape(coordinate, tuple(view)), spatial))
    axes.append(F.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = F.reshape(F.stack(axes, -1), (1, -1, n + 1))
    grid = F.matmul(base, F.transpose(theta, 1, 2))
    return F.reshape(grid, (size[0],) + spatial + (n,))


def _affine_grid_reference(theta, size, align_corners):
    spatial = tuple(size[2:])

    def base(steps):
        if steps <= 1:
            return np.zeros(steps)
        points = np.linspace(-1, 1, steps)
        return points if align_corners else points * (steps - 1) / steps
    coordinates = np.meshgrid(*[base(s) for s in spatial], indexing="ij")
    homogeneous = np.stack(list(coordinates)[::-1] + [np.ones(spatial)], -1)
    return np.einsum("...k,nik->n...i", homogeneous, np.asarray(theta, np.float64))


def _affine_grid_samples(make, dtype):
    yield Sample((make((2, 2, 3)), (2, 3, 4, 5), False))
    yield Sample((make((1, 2, 3)), (1, 1, 1, 3), True), note="a single row sits at 0")
    yield Sample((make((2, 3, 4)), (2, 1, 2, 3, 2), True), note="3-D")


defop("affine_grid_generator(Tensor theta, int[] size, bool align_corners)", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_affine_grid_meta, composite=_affine_grid,
      reference=_affine_grid_reference, samples=_affine_grid_samples, method=False,
      doc="the sampling grid (N, *spatial, n) of the affine maps theta (N, n, n + 1) over the output's "
          "normalized coordinates [-1, 1]: F.affine_grid")


# -- grid_sampler ---------------------------------------------------------------------------------------------

_INTERPOLATION = ("bilinear", "nearest", "bicubic")  # PyTorch's enumeration: grid_sampler's int codes
_PADDING = ("zeros", "border", "reflection")


CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution constant


def cubic_near(x):
    """Keys' cubic convolution kernel for |x| <= 1: ((A + 2) x - (A + 3)) x^2 + 1."""
    return F.add(F.mul(F.sub(F.mul(x, CUBIC_A + 2), CUBIC_A + 3), F.mul(x, x)), 1.0)


def cubic_far(x):
    """Keys' cubic convolution kernel for 1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A."""
    a = CUBIC_A
    return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(x, a), 5 * a), x), 8 * a), x), 4 * a)


def cubic_weights(t) -> list:
    """The four tap weights at offsets -1, 0, 1, 2 from the floor, for a fraction t in [0, 1)."""
    s = F.sub(1.0, t)
    return [cubic_far(F.add(t, 1.0)), cubic_near(t), cubic_near(s), cubic_far(F.add(s, 1.0))]


def _grid_sampler_normalize(op, args):
    if args["interpolation_mode"] not in (0, 1, 2):
        raise ArgumentError(f"grid_sampler: interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got "
                            f"{args['interpolation_mode']}")
    if args["padding_mode"] not in (0, 1, 2):
        raise ArgumentError(f"grid_sampler: padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got "
                            f"{args['padding_mode']}")


def _grid_sampler_meta(input, grid, interpolation_mode, padding_mode, align_corners):
    x, g = shape(input), shape(grid)
    require(len(x) in (4, 5) and all(x[1:]), "grid_sampler", "expected a 4-D (N, C, H, W) or 5-D (N, C, D, H, W) "
            "input with non-zero channels and spatial sizes", input)
    n = len(x) - 2
    require(len(g) == n + 2 and g[-1] == n, "grid_sampler", f"a {len(x)}-D input needs a {n + 2}-D grid whose "
            f"last dim has size {n}", input, grid)
    require(g[0] == x[0], "grid_sampler", "input and grid must have the same batch size", input, grid)
    require(interpolation_mode != 2 or n == 2, "grid_sampler", "bicubic interpolation only supports 4-D input", input)
    return (x[0], x[1]) + g[1:-1]


def _reflect(position, low2: int, high2: int):
    """``position`` reflected into [low2 / 2, high2 / 2] as often as it takes (PyTorch's reflect_coordinates)."""
    if low2 == high2:
        return F.zeros_like(position)
    low, span = low2 / 2, (high2 - low2) / 2
    distance = F.abs(F.sub(position, low))
    extra = F.remainder(distance, span)
    flips = F.floor(F.div(distance, span))
    even = F.eq(F.remainder(flips, 2), 0)
    return F.where(even, F.add(extra, low), F.sub(span + low, extra))


def _unnormalized(coordinate, size: int, align_corners: bool):
    """A normalized grid coordinate in [-1, 1] -> a pixel position (-1 and 1: the corner pixels' centres, or
    their outer edges)."""
    if align_corners:
        return F.mul(F.add(coordinate, 1.0), (size - 1) / 2)
    return F.div(F.sub(F.mul(F.add(coordinate, 1.0), size), 1.0), 2)


def _padded(position, size: int, padding_mode: int, align_corners: bool):
    """A pixel position with border (clamped) or reflection (mirrored, then clamped) padding applied."""
    if padding_mode == 2:
        position = _reflect(position, 0, 2 * (size - 1)) if align_corners else _reflect(position, -1, 2 * size - 1)
    if padding_mode in (1, 2):
        position = F.clamp(position, 0.0, size - 1.0)
    return position


@in_opmath
def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """Gathers from the flattened image at each tap's flat index; taps outside the image weigh zero.
    Half precision computes in float32, so that positions and weights keep their fractions."""
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    dims = len(sizes)
    positions = [_unnormalized(F.select(grid, -1, dims - 1 - d), sizes[d], align_corners)
                 for d in range(dims)]  # grid's last dim lists x (the last spatial dim) first
    if interpolation_mode == 2:  # bicubic pads each of the 4 taps, not the position
        taps_per_dim = []
        for p, size in zip(positions, sizes):
            low = F.floor(p)
            taps = [_padded(F.add(low, offset), size, padding_mode, align_corners) for offset in (-1, 0, 1, 2)]
            taps_per_dim.append(list(zip(taps, cubic_weights(F.sub(p, low)))))
    else:
        positions = [_padded(p, size, padding_mode, align_corners) for p, size in zip(positions, sizes)]
    if interpolation_mode == 1:  # nearest: round half to even, as PyTorch's nearbyint
        taps_per_dim = [[(F.round(p), None)] for p in positions]
    elif interpolation_mode == 0:
        taps_per_dim = []
        for p in positions:
            low = F.floor(p)
            fraction = F.sub(p, low)
            taps_per_dim.append([(low, F.sub(1.0, fraction)), (F.add(low, 1.0), fraction)])
    image = F.reshape(input, (n, c, -1))
    strides = [math.prod(sizes[d + 1:]) for d in range(dims)]
    out = None
    for corner in itertools.product(*taps_per_dim):
        inside, flat, weight = None, None, None
        for d, (index, w) in enumerate(corner):
            ok = F.logical_and(F.ge(index, 0), F.le(index, sizes[d] - 1))
            inside = ok if inside is None else F.logical_and(inside, ok)
            term = F.mul(F.to_dtype(F.clamp(index, 0, sizes[d] - 1), int64), strides[d])
            flat = term if flat is None else F.add(flat, term)
            if w is not None:
                weight = w if weight is None else F.mul(weight, w)
        weight = F.to_dtype(inside, input.dtype) if weight is None else F.where(inside, weight, 0.0)
        where = F.expand(F.reshape(flat, (n, 1, -1)), (n, c, math.prod(out_spatial)))
        value = F.mul(F.gather(image, 2, where), F.reshape(F.to_dtype(weight, input.dtype), (n, 1, -1)))
        out = value if out is None else F.add(out, value)
    return F.reshape(out, (n, c) + out_spatial)


def _grid_sampler_reference(input, grid, interpolation_mode, padding_mode, align_corners):
    """Point by point, straight from the formulas."""
    x, grid = np.asarray(input, np.float64), np.asarray(grid, np.float64)
    n, c, *sizes = x.shape
    dims = len(sizes)

    def reflect(p, low2, high2):
        if low2 == high2:
            return 0.0
        low, span = low2 / 2, (high2 - low2) / 2
        distance = abs(p - low)
        extra, flips = math.fmod(distance, span), math.floor(distance / span)
        return extra + low if flips % 2 == 0 else span - extra + low

    def padded(p, size):
        if padding_mode == 2:
            p = reflect(p, 0, 2 * (size - 1)) if align_corners else reflect(p, -1, 2 * size - 1)
        return min(max(p, 0.0), size - 1.0) if padding_mode else p

    def cubic(t):  # Keys' kernel with A = -0.75 at distances 1 + t, t, 1 - t, 2 - t
        a = CUBIC_A
        near = lambda z: ((a + 2) * z - (a + 3)) * z * z + 1  # noqa: E731
        far = lambda z: ((a * z - 5 * a) * z + 8 * a) * z - 4 * a  # noqa: E731
        return [far(1 + t), near(t), near(1 - t), far(2 - t)]

    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for point in np.ndindex(*grid.shape[1:-1]):
            ps = [grid[(b,) + point + (dims - 1 - d,)] for d in range(dims)]
            ps = [(g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2 for g, size in zip(ps, sizes)]
            if interpolation_mode == 2:
                corners = [[(math.trunc(padded(math.floor(p) + k, size)), w)
                            for k, w in zip((-1, 0, 1, 2), cubic(p - math.floor(p)))] for p, size in zip(ps, sizes)]
                ps = []
            else:
                ps = [padded(p, size) for p, size in zip(ps, sizes)]
            if interpolation_mode == 1:
                corners = [[(float(np.round(p)), 1.0)] for p in ps]
            elif interpolation_mode == 0:
                corners = [[(math.floor(p), 1 - (p - math.floor(p))), (math.floor(p) + 1, p - math.floor(p))]
                           for p in ps]
            for corner in itertools.product(*corners):
                if all(0 <= i <= s - 1 for (i, _), s in zip(corner, sizes)):
                    out[(b, slice(None)) + point] += math.prod(w for _, w in corner) * x[(b, slice(None)) + tuple(
                        int(i) for i, _ in corner)]
    return out


def _grid_sampler_samples(make, dtype):
    yield Sample((make((2, 2, 4, 5)), make((2, 3, 2, 2), low=-1.2, high=1.2), 0, 0, False))
    yield Sample((make((1, 2, 3, 4)), make((1, 2, 3, 2), low=-1.5, high=1.5), 0, 1, True), note="border")
    yield Sample((make((1, 1, 4, 3)), make((1, 3, 2, 2), low=-2.5, high=2.5), 0, 2, False), note="reflection")
    yield Sample((make((1, 2, 3, 4)), make((1, 2, 2, 2), low=-1.2, high=1.2), 1, 2, True),
                 note="nearest, reflection")
    yield Sample((make((1, 2, 2, 3, 3)), make((1, 2, 2, 2, 3), low=-1.2, high=1.2), 0, 0, True), note="5-D")
    yield Sample((make((1, 2, 4, 5)), make((1, 2, 3, 2), low=-1.3, high=1.3), 2, 0, False), note="bicubic")
    yield Sample((make((1, 1, 3, 4)), make((1, 3, 2, 2), low=-1.6, high=1.6), 2, 2, True),
                 note="bicubic, reflection")


defop("grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)",
      "nn", kind="composite", promotion=rules.same, dtypes="float", meta=_grid_sampler_meta,
      normalize=_grid_sampler_normalize, composite=_grid_sampler, reference=_grid_sampler_reference,
      samples=_grid_sampler_samples, method=False,
      doc="input sampled at the normalized grid positions ([-1, 1] per spatial dim, x first): F.grid_sample's "
          "op with modes bilinear (0) / nearest (1) / bicubic (2, 4-D only) and padding zeros (0) / border (1) / "
          "reflection (2)")
