"""Views are new CLArrays over the same buffer; copies, casts and joins run the strided kernel.

A complex element is two adjacent elements of its component type, so ``view_as_real`` and ``view_as_complex``
are views too: the same buffer in units of the other dtype (strides and offset doubled or halved).
"""
from __future__ import annotations

from ember.dispatch import view_strides

from .. import strided
import numpy as np

from ..array import CLArray, empty
from ..cltypes import NUMPY_DTYPE, convert
from ._source import overlaps


def _view(a: CLArray, size):
    strides = view_strides(a.shape, a.strides, tuple(size))
    return a.view_as(tuple(size), strides)


def _permute(a: CLArray, dims):
    return a.view_as(tuple(a.shape[d] for d in dims), tuple(a.strides[d] for d in dims))


def _expand(a: CLArray, size):
    size = tuple(size)
    return a.view_as(size, strided.broadcast_strides(a, size))


def _slice(a: CLArray, dim, start, end, step):
    shape, strides = list(a.shape), list(a.strides)
    shape[dim] = max(0, (end - start + step - 1) // step)
    strides[dim] = a.strides[dim] * step
    offset = a.offset + start * a.strides[dim] if shape[dim] else a.offset
    return a.view_as(tuple(shape), tuple(strides), offset)


def _unfold(a: CLArray, dim, size, step):
    if a.ndim == 0:  # the single window of shape (size,), as PyTorch unfolds a 0-d tensor
        return a.view_as((size,), (1,))
    shape, strides = list(a.shape), list(a.strides)
    shape[dim] = (a.shape[dim] - size) // step + 1
    strides[dim] = a.strides[dim] * step
    return a.view_as(tuple(shape) + (size,), tuple(strides) + (a.strides[dim],))


def _diagonal(a: CLArray, offset, dim1, dim2):
    length = max(0, min(a.shape[dim1] + min(offset, 0), a.shape[dim2] - max(offset, 0)))
    kept = [d for d in range(a.ndim) if d not in (dim1, dim2)]
    start = a.strides[dim1] * max(-offset, 0) + a.strides[dim2] * max(offset, 0) if length else 0
    return a.view_as(tuple(a.shape[d] for d in kept) + (length,),
                     tuple(a.strides[d] for d in kept) + (a.strides[dim1] + a.strides[dim2],), a.offset + start)


_COMPONENT = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_PAIRED = {component: pair for pair, component in _COMPONENT.items()}


def _view_as_real(a: CLArray):
    """(..., 2) of the component type: each complex element's parts, one component apart."""
    return CLArray(a.runtime, a.buffer, a.shape + (2,), _COMPONENT[a.dtype], tuple(2 * s for s in a.strides) + (1,),
                   2 * a.offset)


def _view_as_complex(a: CLArray):
    """The pairs of the last dim (stride 1; other strides and the offset even: the op checks) as complex."""
    strides = tuple(s // 2 for s in a.strides[:-1])
    return CLArray(a.runtime, a.buffer, a.shape[:-1], _PAIRED[a.dtype], strides, a.offset // 2)


def clone(a: CLArray) -> CLArray:
    return strided.run(a.runtime, "x0", [a], a.dtype)


def _to_dtype(a: CLArray, dtype):
    target = NUMPY_DTYPE[dtype]
    return strided.run(a.runtime, convert("x0", a.dtype, target), [a], target)


def _copy_(dst: CLArray, src: CLArray):
    if overlaps(dst, src):  # x[1:] = x[:-1] must read every element before any is written
        src = clone(src)
    strided.run(dst.runtime, convert("x0", src.dtype, dst.dtype), [src], dst.dtype, out=dst)
    return dst


def _cat(tensors, dim):
    first = tensors[0]
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    out = empty(first.runtime, tuple(shape), first.dtype)
    at = 0
    for t in tensors:
        if t.shape[dim]:
            strided.run(out.runtime, "x0", [t], out.dtype, out=_slice(out, dim, at, at + t.shape[dim], 1))
        at += t.shape[dim]
    return out


KERNELS = {
    "view": _view, "permute": _permute, "expand": _expand, "slice": _slice, "unfold": _unfold, "diagonal": _diagonal,
    "clone": clone, "to_dtype": _to_dtype, "copy_": _copy_, "cat": _cat,
    "view_as_real": _view_as_real, "view_as_complex": _view_as_complex,
}
