"""as_strided: a view of a tensor's storage with any sizes, non-negative strides and offset, and
as_strided_scatter, its inverse.

The view is composed of views (a flat view of the storage, then one ``unfold`` per dim, which makes a dim of
the wanted stride, a final strided ``slice``, and ``expand`` for stride-0 dims), so it shares memory on every
backend and differentiates through its parts, overlapping windows included. The storage is the tensor's
base (the tensor a view was made from) viewed flat, so the base must be contiguous. Where the tensor itself
is contiguous and holds every position reached, the view is made of the tensor, so autograd reaches it; a view
requiring grad that reaches beyond its own elements is refused (its history does not cover its base).
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...execution.dispatcher import note_value_read
from ...schema.dtypes import int64
from ...schema.errors import DtypeError, OutOfRangeError, ShapeError, describe
from ...schema.meta import numel, shape
from ...schema import Sample, defop
from ..namespace import F
from .._shared import _in_input_dtype


def _check_geometry(op_name: str, size, stride) -> None:
    if len(size) != len(stride):
        raise ShapeError(f"{op_name}: mismatch in length of strides and shape: size {tuple(size)}, stride "
                         f"{tuple(stride)}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise ShapeError(f"{op_name}: sizes and strides must be non-negative, got size {tuple(size)}, "
                         f"stride {tuple(stride)}")


def _last_position(size, stride, offset: int) -> int:
    return offset + sum((n - 1) * s for n, s in zip(size, stride))


def _check_fits(op_name: str, size, stride, offset: int, storage_size: int, x) -> None:
    if offset < 0:
        raise OutOfRangeError(f"{op_name}: storage_offset must be non-negative, got {offset}")
    if numel(tuple(size)) and _last_position(size, stride, offset) >= storage_size:
        raise OutOfRangeError(f"{op_name}: sizes {list(size)}, strides {list(stride)} and storage offset {offset} "
                              f"reach element {_last_position(size, stride, offset)}, out of bounds for a storage "
                              f"of {storage_size} elements ({describe(x)})")


def _own_offset(x) -> int:
    """x's offset in its base's storage (0 for a tensor that is no view, or one sharing its base's array)."""
    base = x._base
    return 0 if base is None or x._data is base._data else x.storage_offset()


def _resolve(op_name: str, x, size, stride, storage_offset):
    """The tensor whose flattened elements hold every position the view reaches, and the view's offset in
    it: x itself where x is contiguous and holds them all, else x's base (x's storage). Errors name
    ``op_name`` (as_strided, or as_strided_copy, which checks with as_strided's hook)."""
    own = _own_offset(x)
    offset = own if storage_offset is None else storage_offset
    if offset < 0:
        raise OutOfRangeError(f"{op_name}: storage_offset must be non-negative, got {offset}")
    reach = _last_position(size, stride, offset) if numel(tuple(size)) else offset - 1
    if x.is_contiguous() and own <= offset and reach < own + x.numel():
        return x, offset - own
    base = x._base if x._base is not None else x
    if base is x and not x.is_contiguous():
        raise ShapeError(f"{op_name}: the storage of a non-contiguous tensor that is no view has no flat "
                         f"order to stride through ({describe(x)}); call .contiguous() first")
    if base is not x and x.requires_grad:
        raise RuntimeError(f"{op_name}: this view reaches outside the elements of a view that requires grad, "
                           f"into its base's storage, which its history does not cover ({describe(x)}); call "
                           f"{op_name} on the base tensor")
    if not base.is_contiguous():
        raise ShapeError(f"{op_name}: the base of this view is not contiguous ({describe(base)})")
    _check_fits(op_name, size, stride, offset, base.numel(), x)
    return base, offset


def _as_strided_normalize(op, args):
    _check_geometry(op.name, args["size"], args["stride"])
    note_value_read()  # the storage and offset are no part of the plan's key: validate every call
    _resolve(op.name, args["input"], args["size"], args["stride"], args["storage_offset"])


def _strided_view(flat, size, stride, offset: int):
    """The view of the 1-D ``flat`` with ``size``, ``stride`` and ``offset`` (bounds checked already)."""
    if not numel(tuple(size)):
        return F.view(F.slice(flat, 0, 0, 0), tuple(size))
    active = [d for d in range(len(size)) if size[d] > 1 and stride[d] > 0]
    x = F.slice(flat, 0, offset, _last_position(size, stride, offset) + 1)
    for i, d in enumerate(active):
        if i == len(active) - 1:
            x = F.slice(x, x.ndim - 1, 0, None, stride[d])
        else:
            rest = _last_position([size[e] for e in active[i + 1:]], [stride[e] for e in active[i + 1:]], 0) + 1
            x = F.unfold(x, x.ndim - 1, rest, stride[d])
            x = F.slice(x, x.ndim - 2, 0, size[d])
    if not active:
        x = F.slice(x, 0, 0, 1)
    spread = tuple(size[d] if d in active else 1 for d in range(len(size)))
    return F.expand(F.view(x, spread), tuple(size))


def _as_strided(x, size, stride, storage_offset=None):
    storage, offset = _resolve("as_strided", x, size, stride, storage_offset)
    return _strided_view(F.view(storage, (-1,)), size, stride, offset)


def _np_as_strided(x, size, stride, storage_offset=None):
    flat = np.ascontiguousarray(x).reshape(-1)
    offset = storage_offset or 0
    return np.lib.stride_tricks.as_strided(flat[offset:], tuple(size),
                                           tuple(s * flat.itemsize for s in stride)).copy()


def _as_strided_samples(make, dtype):
    yield Sample((make((12,)), (3, 4), (4, 1)), note="row-major")
    yield Sample((make((2, 5)), (4, 3), (2, 1), 1), note="overlapping windows with an offset")
    yield Sample((make((3, 4)), (2, 3, 2), (1, 0, 5)), note="a stride-0 dim, column-major steps")
    yield Sample((make((6,)), (), (), 5), note="0-d")


defop("as_strided(Tensor input, int[] size, int[] stride, int? storage_offset=None)", "view", kind="composite",
      promotion=rules.passthrough, normalize=_as_strided_normalize,
      meta=lambda x, size, stride, storage_offset=None: tuple(size), composite=_as_strided,
      reference=_np_as_strided, samples=_as_strided_samples, batch="loop",
      doc="a view of input's storage (its base's, for a view) with the given sizes, strides and offset "
          "(default: input's own)")


# -- as_strided_scatter ---------------------------------------------------------------------------------------

def _positions(size, stride, offset: int, device):
    """The storage position of every element of the strided view, in its shape."""
    where = F.full(tuple(1 for _ in size), offset, dtype=int64, device=device)
    for d, (n, s) in enumerate(zip(size, stride)):
        steps = F.mul(F.arange(n, dtype=int64, device=device), s)
        where = F.add(where, F.reshape(steps, (1,) * d + (n,) + (1,) * (len(size) - d - 1)))
    return where


def _as_strided_scatter_normalize(op, args):
    x, src, size, stride = args["input"], args["src"], args["size"], args["stride"]
    _check_geometry("as_strided_scatter", size, stride)
    if shape(src) != tuple(size):
        raise ShapeError(f"as_strided_scatter: src must have the view's shape {tuple(size)}, got {shape(src)}")
    if src._dtype is not x._dtype:
        raise DtypeError(f"as_strided_scatter: src must have input's dtype {x._dtype.name}, got {describe(src)}")
    _check_fits("as_strided_scatter", size, stride, args["storage_offset"] or 0, numel(shape(x)), x)


def _as_strided_scatter(x, src, size, stride, storage_offset=None):
    where = F.reshape(_positions(size, stride, storage_offset or 0, x.device), (-1,))
    flat = F.index_put_(F.clone(F.reshape(x, (-1,))), [where], F.reshape(src, (-1,)))
    return F.reshape(flat, tuple(x.shape))


def _np_as_strided_scatter(x, src, size, stride, storage_offset=None):
    out = np.array(x).reshape(-1)
    view = np.lib.stride_tricks.as_strided(out[storage_offset or 0:], tuple(size),
                                           tuple(s * out.itemsize for s in stride))
    view[...] = src
    return out.reshape(np.shape(x))


def _as_strided_scatter_samples(make, dtype):
    yield Sample((make((3, 4)), make((2, 2)), (2, 2), (4, 1), 1), note="a block")
    yield Sample((make((10,)), make((3,)), (3,), (3,)), note="every third element")
    yield Sample((make((2, 3)), make(()), (), (), 5), note="0-d")


defop("as_strided_scatter(Tensor input, Tensor src, int[] size, int[] stride, int? storage_offset=None)",
      "indexing", kind="composite", promotion=_in_input_dtype, normalize=_as_strided_scatter_normalize,
      meta=lambda x, src, size, stride, storage_offset=None: shape(x), composite=_as_strided_scatter,
      dtypes="all+complex", reference=_np_as_strided_scatter, samples=_as_strided_scatter_samples,
      doc="a copy of input with src written at input.as_strided(size, stride, storage_offset), input's elements "
          "in row-major order standing for its storage (PyTorch's, for a contiguous tensor that is no view)")
