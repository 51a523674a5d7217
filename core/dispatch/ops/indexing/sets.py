"""Sets: unique and unique_consecutive, with inverse indices and counts, over elements or over slices along a dim.

Each is one schema op that always yields (output, inverse_indices, counts), as PyTorch's ``_unique2``, and a
public function that picks what the caller asked for. Both are stable sorts (lexicographic over slices) followed
by marking where a run of equal values starts: how many values there are depends on the data (argwhere).
Not differentiable, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ...schema.dtypes import int64
from ...schema.errors import ShapeError, describe
from ...schema.meta import shape
from ...schema import Sample, defop
from ..namespace import F


def _as_rows(x, dim):
    """``x`` as a 2-D (slices, elements) tensor: one row per element (dim None) or per slice along dim."""
    if dim is None:
        return F.reshape(x, (-1, 1))
    return F.reshape(F.transpose(x, 0, dim) if dim else x, (x.shape[dim], -1))


def _from_rows(rows, x, dim):
    """Unique rows back in x's layout: 1-D for dim None, else slices stacked along dim (undoing _as_rows)."""
    if dim is None:
        return F.reshape(rows, (-1,))
    swapped = list(x.shape)
    swapped[0], swapped[dim] = swapped[dim], swapped[0]
    out = F.reshape(rows, (rows.shape[0],) + tuple(swapped[1:]))
    return F.transpose(out, 0, dim) if dim else out


def _lexicographic_order(rows):
    """The stable order that sorts the rows lexicographically: sort by the last column first."""
    order = F.arange(rows.shape[0], device=rows.device)
    for column in reversed(range(rows.shape[1])):
        keys = F.index(F.select(rows, 1, column), [order])
        order = F.index(order, [F.argsort(keys, 0, stable=True)])
    return order


def _runs(rows, x_shape_for_inverse, order=None):
    """(first row of each run, inverse index per original row, run lengths) for rows already in run order;
    ``order`` maps sorted positions back to the original rows."""
    n = rows.shape[0]
    if n == 0:
        empty = F.zeros((0,), dtype=int64, device=rows.device)
        return rows, F.reshape(empty, x_shape_for_inverse), empty
    differs = F.any(F.ne(F.slice(rows, 0, 1), F.slice(rows, 0, 0, -1)), 1) if rows.shape[1] else \
        F.zeros((n - 1,), dtype=F.eq(rows, rows).dtype, device=rows.device)
    starts_run = F.cat([F.ones((1,), dtype=differs.dtype, device=rows.device), differs], 0)
    group = F.sub(F.cumsum(F.to_dtype(starts_run, int64), 0), 1)
    starts = F.reshape(F.argwhere(starts_run), (-1,))
    inverse = group if order is None else F.scatter(F.zeros((n,), dtype=int64, device=rows.device), 0, order, group)
    counts = F.diff(starts, append=F.full((1,), n, dtype=int64, device=rows.device))
    return F.index(rows, [starts]), F.reshape(inverse, x_shape_for_inverse), counts


def _check_dim(op_name: str, x, dim) -> None:
    if dim is not None and not shape(x):
        raise ShapeError(f"{op_name}: cannot take unique slices along dim {dim} of a 0-d tensor ({describe(x)})")


def _unique_meta(x, sorted=True, dim=None):
    _check_dim("_unique", x, dim)
    if dim is None:
        return (None,), shape(x), (None,)
    return shape(x)[:dim] + (None,) + shape(x)[dim + 1:], (shape(x)[dim],), (None,)


def _unique(x, sorted=True, dim=None):
    rows = _as_rows(x, dim)
    order = F.argsort(F.select(rows, 1, 0), 0, stable=True) if dim is None else _lexicographic_order(rows)
    values, inverse, counts = _runs(F.index(rows, [order]), tuple(x.shape) if dim is None else (-1,), order)
    return _from_rows(values, x, dim), inverse, counts


def _unique_consecutive(x, dim=None):
    values, inverse, counts = _runs(_as_rows(x, dim), tuple(x.shape) if dim is None else (-1,))
    return _from_rows(values, x, dim), inverse, counts


def _unique_reference(x, sorted=True, dim=None):
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=dim, equal_nan=False)
    return values, inverse.reshape(x.shape if dim is None else (-1,)).astype(np.int64), counts.astype(np.int64)


def _unique_consecutive_reference(x, dim=None):
    rows = x.reshape(-1, 1) if dim is None else np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    if not len(rows):
        return (x.reshape(-1) if dim is None else x), np.zeros(x.shape if dim is None else (0,), np.int64), \
            np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]).any(axis=1)])
    inverse = np.cumsum(np.isin(np.arange(len(rows)), starts)) - 1
    counts = np.diff(np.r_[starts, len(rows)])
    values = x.reshape(-1)[starts] if dim is None else np.take(x, starts, axis=dim)
    return values, inverse.reshape(x.shape if dim is None else (-1,)), counts


def _repeated(make, dtype, shape_):
    """Values with repeats: a few distinct values drawn into a larger shape."""
    pool = make((3,))
    return F.index(pool, [make(shape_, dtype=int64, low=0, high=3)])


def _unique_samples(make, dtype):
    yield Sample((_repeated(make, dtype, (4, 5)),))
    yield Sample((_repeated(make, dtype, (6,)), False), note="sorted=False")
    rows = _repeated(make, dtype, (3, 2))
    yield Sample((F.cat([rows, rows, F.flip(rows, [0])], 0),), {"dim": 0}, note="unique rows")
    yield Sample((F.transpose(F.cat([rows, rows], 0), 0, 1),), {"dim": 1}, note="unique columns")
    yield Sample((make((0,)),), note="empty")


def _unique_consecutive_samples(make, dtype):
    yield Sample((_repeated(make, dtype, (3, 4)),))
    rows = _repeated(make, dtype, (2, 3))
    yield Sample((F.cat([rows, rows, F.flip(rows, [0])], 0), 0), note="runs of rows")
    yield Sample((make((0, 2)),), note="empty")


def _outputs_promotion(rt, op, args):
    """Computed in the input's dtype, so that complex input is refused, as PyTorch's unique refuses it."""
    return rt, (rt, int64, int64)


defop("_unique(Tensor input, bool sorted=True, dim? dim=None)", "indexing", kind="composite",
      promotion=_outputs_promotion, meta=_unique_meta, composite=_unique, reference=_unique_reference,
      samples=_unique_samples, outputs=("output", "inverse_indices", "counts"), differentiable=False, method=False,
      doc="the sorted distinct elements (or slices along dim), each element's index among them, and their counts")


def _unique_consecutive_meta(x, dim=None):
    _check_dim("_unique_consecutive", x, dim)
    return _unique_meta(x, True, dim)


defop("_unique_consecutive(Tensor input, dim? dim=None)", "indexing", kind="composite",
      promotion=_outputs_promotion, meta=_unique_consecutive_meta, composite=_unique_consecutive,
      reference=_unique_consecutive_reference, samples=_unique_consecutive_samples,
      outputs=("output", "inverse_indices", "counts"), differentiable=False, method=False,
      doc="one element (or slice along dim) of each run of equal ones, each one's run index, and run lengths")


def _picked(result, return_inverse: bool, return_counts: bool):
    """What torch.unique returns: the values alone, or a tuple with the inverse indices and/or counts."""
    if not return_inverse and not return_counts:
        return result.output
    return (result.output,) + ((result.inverse_indices,) if return_inverse else ()) + \
        ((result.counts,) if return_counts else ())


def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """torch.unique: the distinct elements of input (or its distinct slices along dim), sorted."""
    return _picked(F._unique(input, sorted, dim), return_inverse, return_counts)


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """torch.unique_consecutive: input with each run of equal elements (or slices along dim) collapsed to one."""
    return _picked(F._unique_consecutive(input, dim), return_inverse, return_counts)


FUNCTIONS = {"unique": unique, "unique_consecutive": unique_consecutive}
METHODS = FUNCTIONS
