"""Views share the input's memory; copies, casts and joins make new arrays."""
from __future__ import annotations

from ember.dispatch import diagonal_view

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    as_strided, windows_of, reshape_view = lib.as_strided, lib.sliding_window_view, lib.reshape_view
    dtypes = lib.dtypes

    def _slice(a, dim, start, end, step):
        if dim == 0:  # x[a:b], the commonest slice: no index tuple to build
            return a[start:end:step]
        return a[(slice(None),) * dim + (slice(start, end, step),)]

    def _unfold(a, dim, size, step):
        if a.ndim == 0:  # the single window of shape (size,), as PyTorch unfolds a 0-d tensor
            return windows_of(a.reshape(1), size, 0, True)[0]
        windows = windows_of(a, size, dim, True)
        return windows[(slice(None),) * dim + (slice(None, None, step),)]

    def _expand(a, size):
        lead = len(size) - a.ndim
        strides = (0,) * lead + tuple(0 if (s == 1 and n != 1) else st
                                      for s, n, st in zip(a.shape, size[lead:], a.strides))
        return as_strided(a, size, strides, True)

    def _diagonal(a, offset, dim1, dim2):
        """The diagonal's first element, then one step along both dims per element."""
        corner, size, strides = diagonal_view(a.shape, a.strides, offset, dim1, dim2)
        return as_strided(a[corner], size, strides, True)

    def _copy_(dst, src):
        xp.copyto(dst, src, casting="unsafe")
        return dst

    return {
        "view": reshape_view,
        "permute": lambda a, dims: xp.transpose(a, dims),
        "expand": _expand,
        "slice": _slice,
        "unfold": _unfold,
        "diagonal": _diagonal,
        "clone": lambda a: xp.array(a, order="C", copy=True),
        "to_dtype": lambda a, dtype: a.astype(dtypes[dtype]),
        "copy_": _copy_,
        "cat": lambda tensors, dim: xp.concatenate(tensors, axis=dim),
    }
