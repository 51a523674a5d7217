"""Views share the input's memory; copies, casts and joins make new arrays."""
from __future__ import annotations

from ember.dispatch import diagonal_view

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    as_strided, windows_of, reshape_view = lib.as_strided, lib.sliding_window_view, lib.reshape_view
    dtypes = lib.dtypes
    floating = {v for k, v in dtypes.items() if k.is_floating_point}
    unsigned = {v for k, v in dtypes.items() if k.kind == "int" and not k.is_signed}
    complexes = {v for k, v in dtypes.items() if k.kind == "complex"}

    def _wrappable(a, to):
        """``a`` ready for a C-style cast to ``to``: floats bound for an unsigned dtype go through int64 first,
        as c10 converts them, so that -2.0 becomes 254 in uint8 on every library. Converting an out-of-range
        float straight to an unsigned type is undefined in C: x86 (NumPy) wraps, CUDA (CuPy) saturates (-2.0 -> 0).
        Complex values bound for a real number dtype keep their real part, without NumPy's ComplexWarning: the
        autograd engine casts that way on purpose (a real input's gradient is the real part of a complex one).
        To bool, a complex value is its truth: nonzero in either part."""
        if a.dtype in complexes and to not in complexes and to.kind != "b":
            a = a.real
        return a.astype(xp.int64) if to in unsigned and a.dtype in floating else a

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

    def _stack(tensors, dim):
        """One library call, not an unsqueeze per tensor and a cat; along dim 0 (a batch of rows) a concatenate,
        which skips stack's Python-level work per array."""
        first = tensors[0]
        if dim == 0 and first.ndim:
            return xp.concatenate(tensors).reshape((len(tensors),) + first.shape)
        return xp.stack(tensors, axis=dim)

    def _copy_(dst, src):
        xp.copyto(dst, _wrappable(src, dst.dtype), casting="unsafe")
        return dst

    return {
        "view": reshape_view,
        "permute": lambda a, dims: xp.transpose(a, dims),
        "expand": _expand,
        "slice": _slice,
        # overrides of composites (slice and squeeze; view), as one view each: x[i], x[:, -1], x[None] are common
        "select": lambda a, dim, index: a[(slice(None),) * dim + (index, Ellipsis)],  # Ellipsis: 0-d stays an array
        "unsqueeze": lambda a, dim: a[(slice(None),) * dim + (None,)],
        "unfold": _unfold,
        "diagonal": _diagonal,
        "clone": lambda a: xp.array(a, order="C", copy=True),
        "to_dtype": lambda a, dtype: _wrappable(a, dtypes[dtype]).astype(dtypes[dtype]),
        "copy_": _copy_,
        "cat": lambda tensors, dim: xp.concatenate(tensors, axis=dim),
        "stack": _stack,
    }
