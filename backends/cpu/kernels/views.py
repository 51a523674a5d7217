"""Views share the input's memory (NumPy views); copies, casts and joins make new arrays."""
from __future__ import annotations

import numpy as np

from ..dtypes import NUMPY_DTYPE


def _view(a, size):
    return np.reshape(a, size, copy=False)


def _slice(a, dim, start, end, step):
    return a[(slice(None),) * dim + (slice(start, end, step),)]


def _unfold(a, dim, size, step):
    if a.ndim == 0:
        a = a.reshape(1)
    windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim, writeable=True)
    return windows[(slice(None),) * dim + (slice(None, None, step),)]


def _expand(a, size):
    return np.lib.stride_tricks.as_strided(
        a, shape=size, strides=(0,) * (len(size) - a.ndim) + tuple(
            0 if (s == 1 and n != 1) else st for s, n, st in zip(a.shape, size[len(size) - a.ndim:], a.strides)),
        writeable=True)


def _copy_(dst, src):
    np.copyto(dst, src, casting="unsafe")
    return dst


KERNELS = {
    "view": _view,
    "permute": lambda a, dims: np.transpose(a, dims),
    "expand": _expand,
    "slice": _slice,
    "unfold": _unfold,
    "clone": lambda a: np.array(a, order="C", copy=True),
    "to_dtype": lambda a, dtype: a.astype(NUMPY_DTYPE[dtype]),
    "copy_": _copy_,
    "cat": lambda tensors, dim: np.concatenate(tensors, axis=dim),
}
