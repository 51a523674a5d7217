"""A minimal PNG encoder (zlib only): TensorBoard stores images as PNG, and Pillow is not a dependency."""
from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type: grey, RGB, RGBA


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(pixels: np.ndarray) -> bytes:
    """PNG bytes of an (H, W, C) uint8 image, C in {1, 3, 4}: 8 bits per sample, no filtering."""
    height, width, channels = pixels.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # each row starts with filter type 0
    rows[:, 1:] = pixels.reshape(height, width * channels)
    return (_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + _chunk(b"IEND", b""))
