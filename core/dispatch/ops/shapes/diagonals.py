"""Diagonals: the ``diagonal`` view (a primitive: no chain of other views can step by two strides at once),
and diag_embed, diag, diagflat and trace composed from it and from indexing; fill_diagonal_, in place."""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.binding import wrap_dim
from ...schema.dtypes import bool_, int64
from ...schema.errors import ShapeError, describe
from ...schema.meta import numel, require, shape
from ...schema.overflow import check_fits
from ...schema import Sample, defop
from ..namespace import F


def diagonal_length(rows: int, cols: int, offset: int) -> int:
    """How many elements the ``offset`` diagonal of a rows x cols matrix has (0 when it misses the matrix)."""
    return max(0, min(rows + min(offset, 0), cols - max(offset, 0)))


def diagonal_view(shape: tuple, strides: tuple, offset: int, dim1: int, dim2: int) -> tuple[tuple, tuple, tuple]:
    """How a backend presents ``diagonal(offset, dim1, dim2)`` as a strided view: (``corner``, shape, strides),
    where indexing the input with ``corner`` (a tuple of slices) moves its start to the diagonal's first
    element, the other dims keep their order and strides, and the diagonal is the last dim."""
    length = diagonal_length(shape[dim1], shape[dim2], offset)
    corner = [slice(None)] * len(shape)
    if length:
        corner[dim1], corner[dim2] = slice(max(-offset, 0), None), slice(max(offset, 0), None)
    kept = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    return (tuple(corner), tuple(shape[d] for d in kept) + (length,),
            tuple(strides[d] for d in kept) + (strides[dim1] + strides[dim2],))


# -- diagonal: a view -------------------------------------------------------------------------------

def _diagonal_normalize(op, args) -> None:
    x = args["input"]
    if len(shape(x)) < 2:
        raise ShapeError(f"{op.name}: expects a tensor of at least 2 dimensions, got {describe(x)}")
    if args["dim1"] == args["dim2"]:
        raise ShapeError(f"{op.name}: dim1 and dim2 cannot be identical, got {args['dim1']} for both ({describe(x)})")


def _diagonal_meta(x, offset=0, dim1=0, dim2=1):
    s = shape(x)
    kept = tuple(n for d, n in enumerate(s) if d not in (dim1, dim2))
    return kept + (diagonal_length(s[dim1], s[dim2], offset),)


def _fit(t, dim: int, size: int):
    """``t`` cut or zero-padded at the end of ``dim`` to length ``size`` (differentiable: slice and cat)."""
    length = t.shape[dim]
    if length >= size:
        return F.slice(t, dim, 0, size) if length > size else t
    pad_shape = list(t.shape)
    pad_shape[dim] = size - length
    return F.cat([t, F.zeros(tuple(pad_shape), dtype=t.dtype, device=t.device)], dim)


def _diagonal_derivative(grad, input, offset, dim1, dim2):
    """The gradient laid back on the diagonal of zeros shaped like the input."""
    s = tuple(input.shape)
    full = diag_embed_composite(grad, offset, -2, -1)  # (..., k, k) with k = length + |offset|
    full = _fit(_fit(full, -2, s[dim1]), -1, s[dim2])
    kept = [d for d in range(len(s)) if d not in (dim1, dim2)]
    order = kept + [dim1, dim2]  # where each input dim sits in ``full``
    return F.permute(full, tuple(order.index(d) for d in range(len(s))))


def _diagonal_reference(x, offset=0, dim1=0, dim2=1):
    return np.diagonal(x, offset, dim1, dim2).copy()


def _diagonal_samples(make, dtype):
    yield Sample((make((3, 4)),))
    yield Sample((make((4, 3)), -1), note="below the main diagonal")
    yield Sample((make((2, 3, 4), noncontiguous=True), 1, 2, 0), note="dims 2 and 0, non-contiguous")
    yield Sample((make((3, 3)), 5), note="offset beyond the matrix: empty")


defop("diagonal(Tensor input, int offset=0, dim dim1=0, dim dim2=1)", "view", promotion=rules.passthrough,
      meta=_diagonal_meta, normalize=_diagonal_normalize, view=True, derivative=_diagonal_derivative,
      reference=_diagonal_reference, samples=_diagonal_samples, batch="dims",
      doc="the offset diagonal of the dim1 x dim2 matrices as a view, its dim last")


# -- diag_embed ------------------------------------------------------------------------------------

def _embed_dims(x, offset, dim1, dim2) -> tuple:
    ndim = len(shape(x)) + 1
    d1, d2 = wrap_dim("diag_embed", dim1, ndim, x), wrap_dim("diag_embed", dim2, ndim, x)
    if d1 == d2:
        raise ShapeError(f"diag_embed: dim1 and dim2 cannot be identical, got {dim1} and {dim2} ({describe(x)})")
    return d1, d2


def _diag_embed_meta(x, offset=0, dim1=-2, dim2=-1):
    if not shape(x):
        raise ShapeError(f"diag_embed: expects a tensor of at least 1 dimension, got {describe(x)}")
    d1, d2 = _embed_dims(x, offset, dim1, dim2)
    k = shape(x)[-1] + abs(offset)
    out = list(shape(x)[:-1])
    for d in sorted((d1, d2)):
        out.insert(d, k)
    return tuple(out)


def diag_embed_composite(x, offset=0, dim1=-2, dim2=-1):
    """Each last-dim vector of ``x`` on the offset diagonal of a square matrix of zeros, whose two dims land at
    dim1 and dim2: out[..., i, i + offset] = x[..., i] (one index op, so it differentiates twice)."""
    d1, d2 = _embed_dims(x, offset, dim1, dim2)
    length = x.shape[-1]
    k = length + abs(offset)
    rows = F.unsqueeze(F.arange(k, device=x.device), 1)
    cols = F.unsqueeze(F.arange(k, device=x.device), 0)
    # which element of x sits at (r, c): on the diagonal its own, elsewhere a zero appended to x
    source = F.where(F.eq(F.sub(cols, rows), offset), F.expand(rows if offset >= 0 else cols, (k, k)), length)
    padded = F.cat([x, F.zeros(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)], -1)
    square = F.index(padded, [None] * (x.ndim - 1) + [source])
    batch = list(range(x.ndim - 1))
    order = [None] * (x.ndim + 1)
    order[d1], order[d2] = x.ndim - 1, x.ndim
    rest = iter(batch)
    order = [next(rest) if o is None else o for o in order]
    return F.permute(square, tuple(order)) if order != list(range(x.ndim + 1)) else square


def _diag_embed_reference(x, offset=0, dim1=-2, dim2=-1):
    k = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (k, k), x.dtype)
    i = np.arange(x.shape[-1])
    out[..., i + max(-offset, 0), i + max(offset, 0)] = x
    ndim = x.ndim + 1
    return np.moveaxis(out, (-2, -1), (dim1 % ndim, dim2 % ndim))


def _diag_embed_samples(make, dtype):
    yield Sample((make((2, 3)),))
    yield Sample((make((2, 3)), 1, 0, 2), note="offset 1 into dims 0 and 2")
    yield Sample((make((4,), noncontiguous=True), -2, 1, 0), note="below, transposed")
    yield Sample((make((2, 0)), 1), note="empty vectors")


defop("diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1)", "indexing", kind="composite",
      promotion=rules.passthrough, meta=_diag_embed_meta, composite=diag_embed_composite,
      reference=_diag_embed_reference, samples=_diag_embed_samples,
      doc="the last dim's vectors on the offset diagonal of zero matrices spanning dim1 and dim2")


# -- diag, diagflat, trace ---------------------------------------------------------------------------

def _diag_meta(x, diagonal=0):
    s = shape(x)
    if len(s) == 1:
        return (s[0] + abs(diagonal),) * 2
    if len(s) == 2:
        return (diagonal_length(s[0], s[1], diagonal),)
    raise ShapeError(f"diag: expects a 1-D or 2-D tensor, got {describe(x)}")


def _diag(x, diagonal=0):
    if x.ndim == 1:
        return diag_embed_composite(x, diagonal)
    return F.clone(F.diagonal(x, diagonal))


def _diag_samples(make, dtype):
    yield Sample((make((3,)),), note="vector to matrix")
    yield Sample((make((3,)), -1), note="vector below the diagonal")
    yield Sample((make((3, 4), noncontiguous=True), 1), note="matrix to vector")
    yield Sample((make((3, 4)), -5), note="offset beyond the matrix")


defop("diag(Tensor input, int diagonal=0)", "indexing", kind="composite", promotion=rules.passthrough,
      meta=_diag_meta, composite=_diag, reference=lambda x, diagonal=0: np.diag(x, diagonal).copy(),
      samples=_diag_samples, doc="a 1-D input on a diagonal of a square matrix, or a 2-D input's diagonal")


def _diagflat_meta(x, offset=0):
    n = 1
    for s in shape(x):
        n *= s
    return (n + abs(offset),) * 2


def _diagflat_samples(make, dtype):
    yield Sample((make((2, 2)),))
    yield Sample((make((3,)), 2), note="above the diagonal")
    yield Sample((make(()), -1), note="0-d")


defop("diagflat(Tensor input, int offset=0)", "indexing", kind="composite", promotion=rules.passthrough,
      meta=_diagflat_meta, composite=lambda x, offset=0: diag_embed_composite(F.reshape(x, (-1,)), offset),
      reference=lambda x, offset=0: np.diagflat(x, offset), samples=_diagflat_samples,
      doc="the flattened input on the offset diagonal of a square matrix of zeros")


def _trace_meta(x):
    if len(shape(x)) != 2:
        raise ShapeError(f"trace: expects a matrix (2-D tensor), got {describe(x)}")
    return ()


def _trace_samples(make, dtype):
    yield Sample((make((3, 3)),))
    yield Sample((make((2, 4), noncontiguous=True),), note="rectangular")
    yield Sample((make((0, 2)),), note="empty")


defop("trace(Tensor input)", "linalg", kind="composite", promotion=rules.accumulate, dtypes="numeric+complex",
      meta=_trace_meta, composite=lambda x: F.sum(F.diagonal(x)),
      reference=lambda x: np.asarray(np.trace(x, dtype=np.int64 if x.dtype.kind in "iub" else x.dtype)),
      samples=_trace_samples, doc="the sum of a matrix's main diagonal (integers sum in int64)")


# -- fill_diagonal_ ---------------------------------------------------------------------------

def _fill_diagonal_normalize(op, args):
    x, value = args["self"], args["fill_value"]
    in_shape = shape(x)
    require(len(in_shape) >= 2, op.name, "dimensions must larger than 1", x)
    require(len(in_shape) == 2 or len(set(in_shape)) == 1, op.name, "all dimensions of input must be of equal length",
            x)
    if isinstance(value, (int, float)):
        check_fits(op.name, value, x.dtype)  # as fill_ does: 300 into uint8 is refused, not wrapped


def _diagonal_positions(in_shape: tuple, wrap: bool) -> range:
    """Flat positions of the main diagonal: a step of one past each row's length; on a tall matrix ``wrap``
    starts again below the square part (NumPy's fill_diagonal)."""
    step = sum(numel(in_shape[d + 1:]) for d in range(len(in_shape)))
    end = numel(in_shape) if wrap or len(in_shape) > 2 else min(in_shape[0], in_shape[1]) * in_shape[1]
    return range(0, end, step)


def _fill_diagonal(x, fill_value, wrap=False):
    """A mask of the diagonal, then where: nothing of self's old values is saved for the backward, which the
    write into self would invalidate (the gradient to them is zero on the diagonal)."""
    in_shape = tuple(x.shape)
    positions = _diagonal_positions(in_shape, wrap)
    where_to = F.arange(positions.start, max(positions.stop, positions.start), positions.step, dtype=int64,
                        device=x.device)
    mask = F.index_put_(F.zeros((numel(in_shape),), dtype=bool_, device=x.device), [where_to],
                        F.full((), True, dtype=bool_, device=x.device))
    value = F.full((), fill_value, dtype=x.dtype, device=x.device)
    return F.copy_(x, F.where(F.reshape(mask, in_shape), value, x))


def _fill_diagonal_reference(x, fill_value, wrap=False):
    out = np.array(x)
    np.fill_diagonal(out, fill_value, wrap=wrap)
    return out


def _fill_diagonal_samples(make, dtype):
    value = -1.5 if dtype.is_floating_point else 2
    yield Sample((make((3, 3)), value))
    yield Sample((make((7, 3)), value), note="tall")
    yield Sample((make((7, 3)), value, True), note="tall, wrapped")
    yield Sample((make((2, 5), noncontiguous=True), value, True), note="wide, non-contiguous")
    yield Sample((make((3, 3, 3)), value), note="3-D")
    yield Sample((make((0, 3)), value), note="empty")


defop("fill_diagonal_(Tensor self, Scalar fill_value, bool wrap=False)", "indexing", kind="composite",
      torch_keywords={"input": "self"},
      promotion=rules.passthrough, normalize=_fill_diagonal_normalize, meta=lambda x, *rest: shape(x),
      mutates=True, composite=_fill_diagonal, reference=_fill_diagonal_reference, samples=_fill_diagonal_samples,
      doc="writes fill_value (cast to self's dtype) on the main diagonal, in place; beyond 2 dims all dims have "
          "one length; wrap: a tall matrix's diagonal starts again below the square part, as NumPy's")
