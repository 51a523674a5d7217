"""Image summaries: any of PyTorch's ``dataformats`` to one (H, W, C) uint8 picture, batches as a grid."""
from __future__ import annotations

import math

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary

from ...dispatch.schema.errors import ShapeError
from ._convert import to_numpy
from .png import encode_png

_AXES = {2: "HW", 3: "HWC", 4: "NCHW"}  # for each rank, the axes the picture is built from
_CHANNELS = (1, 3, 4)                   # grey (shown as RGB, as PyTorch does), RGB, RGBA


def _check_format(where: str, dataformats, shape: tuple) -> str:
    if not isinstance(dataformats, str):
        raise TypeError(f"{where}: dataformats must be a string such as 'CHW', got {type(dataformats).__name__}")
    fmt = dataformats.upper()
    if len(fmt) not in _AXES or sorted(fmt) != sorted(_AXES[len(fmt)]):
        raise ValueError(f"{where}: dataformats {dataformats!r} is not one of the accepted layouts: each of "
                         "H and W once, plus C for a single image (CHW, HWC) or N and C for a batch "
                         "(NCHW, NHWC), or just HW")
    if len(shape) != len(fmt):
        raise ShapeError(f"{where}: dataformats {dataformats!r} needs a {len(fmt)}-d image, got shape {shape}")
    if 0 in shape:
        raise ShapeError(f"{where}: the image of shape {shape} ({dataformats}) is empty")
    if "C" in fmt and shape[fmt.index("C")] not in _CHANNELS:
        raise ShapeError(f"{where}: an image has 1, 3 or 4 channels (grey, RGB, RGBA), got "
                         f"{shape[fmt.index('C')]} in shape {shape} ({dataformats})")
    return fmt


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """NCHW images side by side, ``ncols`` to a row, no padding (as PyTorch's tensorboard grid): CHW."""
    count, channels, height, width = images.shape
    ncols = min(count, ncols)
    nrows = math.ceil(count / ncols)
    canvas = np.zeros((channels, height * nrows, width * ncols), dtype=images.dtype)
    for i, picture in enumerate(images):
        row, col = divmod(i, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = picture
    return canvas


def to_hwc(array: np.ndarray, dataformats: str, where: str = "add_image") -> np.ndarray:
    """The picture as (H, W, C) with C in {3, 4}: one channel is repeated as grey RGB."""
    fmt = _check_format(where, dataformats, tuple(array.shape))
    order = [fmt.index(axis) for axis in _AXES[len(fmt)]]
    array = array.transpose(order)
    if array.ndim == 2:
        array = array[:, :, None]
    elif array.ndim == 4:
        array = make_grid(array).transpose(1, 2, 0)
    if array.shape[2] == 1:
        array = np.concatenate([array] * 3, axis=2)
    return array


def to_uint8(hwc: np.ndarray) -> np.ndarray:
    """uint8 pixels are kept; any other dtype is read as [0, 1] and scaled by 255 (clipped, truncated)."""
    if hwc.dtype == np.uint8:
        return hwc
    return (hwc.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


def image(tag: str, img, dataformats: str = "CHW", where: str = "add_image") -> Summary:
    """The ``Summary`` of one picture (a batch becomes a grid), PNG-encoded."""
    pixels = to_uint8(to_hwc(to_numpy(img, where), dataformats, where))
    height, width, channels = pixels.shape
    encoded = Summary.Image(height=height, width=width, colorspace=channels,
                            encoded_image_string=encode_png(pixels))
    return Summary(value=[Summary.Value(tag=tag, image=encoded)])
