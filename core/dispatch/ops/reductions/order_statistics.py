"""Order statistics along a dim: kthvalue, median, nanmedian, mode, msort.

Composites over the stable sort (NaN sorts last, ties keep their order): the k-th value is one gather from the
sorted values and their indices, so every backend runs them. Their gradient goes wholly to the selected
element, as PyTorch's.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.errors import OutOfRangeError
from ...schema.meta import describe, reduced, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from ._shared import _dim_pair_meta, _selected_derivative


# -- NumPy references ------------------------------------------------------------------------------------------

def _per_row(row_fn):
    """A reference ``(x, dim, keepdim)`` -> (values, indices) from ``row_fn(row) -> (value, index)`` on 1-D rows."""
    def reference(x, dim=-1, keepdim=False):
        x = np.asarray(x)
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        moved = np.moveaxis(x, dim, -1)
        rows = moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])
        picked = [row_fn(row) for row in rows]
        values = np.array([v for v, _ in picked], dtype=x.dtype).reshape(moved.shape[:-1])
        indices = np.array([i for _, i in picked], dtype=np.int64).reshape(moved.shape[:-1])
        if keepdim:
            values, indices = np.expand_dims(values, dim), np.expand_dims(indices, dim)
        return values, indices
    return reference


def _kth_of_row(row, k):
    order = np.argsort(row, kind="stable")  # NumPy sorts NaN last, as Ember
    return row[order[k]], order[k]


def _median_of_row(row, ignore_nan=False):
    nans = np.isnan(row) if row.dtype.kind == "f" else np.zeros(row.shape, bool)
    order = np.argsort(row, kind="stable")
    if ignore_nan:
        count = len(row) - int(nans.sum())
        position = max(count - 1, 0) // 2
    else:
        position = len(row) - int(nans.sum()) if nans.any() else (len(row) - 1) // 2
    return row[order[position]], order[position]


def _mode_of_row(row):
    values, counts = np.unique(row, return_counts=True)
    value = values[counts == counts.max()][0]  # the smallest of the most frequent
    return value, np.nonzero(row == value)[0][-1]  # at its last position


# -- composites ---------------------------------------------------------------------------------------------------

def _select(sorted_pair, position, dim, keepdim):
    """The values and indices at ``position`` (an int, or an index tensor with the reduced dim kept) along dim."""
    values, indices = sorted_pair
    if isinstance(position, int):
        values, indices = F.slice(values, dim, position, position + 1), F.slice(indices, dim, position, position + 1)
    else:
        values, indices = F.gather(values, dim, position), F.gather(indices, dim, position)
    if not keepdim:
        values, indices = F.squeeze(values, dim), F.squeeze(indices, dim)
    return values, indices


def _itself(x):
    return F.clone(x), F.zeros_like(x, dtype=int64)


def _kthvalue(x, k, dim=None, keepdim=False):
    if x.ndim == 0:
        return _itself(x)
    return _select(F.sort(x, dim, stable=True), k - 1, dim, keepdim)


def _median(x, dim, keepdim=False, ignore_nan=False):
    """The lower median; where a row holds NaN, the first NaN (median) or the median of the rest (nanmedian)."""
    if x.ndim == 0:
        return _itself(x)
    n = x.shape[dim]
    if not x.dtype.is_floating_point:
        return _select(F.sort(x, dim, stable=True), (n - 1) // 2, dim, keepdim)
    nans = F.sum(F.isnan(x), dim, True)
    if ignore_nan:
        position = F.floor_divide(F.clamp(F.sub(F.sub(n, nans), 1), 0, None), 2)
    else:
        position = F.where(F.gt(nans, 0), F.sub(n, nans), F.full((), (n - 1) // 2, dtype=int64, device=x.device))
    return _select(F.sort(x, dim, stable=True), position, dim, keepdim)


def _mode(x, dim=-1, keepdim=False):
    """The most frequent value (the smallest of several) and its last index: counts of equal pairs along dim."""
    if x.ndim == 0:
        return _itself(x)
    counts = F.sum(F.eq(F.unsqueeze(x, dim + 1), F.unsqueeze(x, dim)), dim + 1)
    most = F.eq(counts, F.amax(counts, dim, True))
    value = F.amin(F.where(most, x, F.amax(x, dim, True)), dim, True)
    positions = F.reshape(F.arange(x.shape[dim], device=x.device), (-1,) + (1,) * (x.ndim - dim - 1))
    index = F.amax(F.where(F.eq(x, value), positions, F.full((), -1, dtype=int64, device=x.device)), dim, True)
    return (value, index) if keepdim else (F.squeeze(value, dim), F.squeeze(index, dim))


# -- checks and metas ------------------------------------------------------------------------------------------

def _kthvalue_normalize(op, args):
    """dim None is the last dim; k must pick an element of it."""
    x, k = args["input"], args["k"]
    ndim = len(shape(x))
    dim = args["dim"]
    dim = (ndim - 1 if ndim else 0) if dim is None else dim
    args["dim"] = dim
    length = shape(x)[dim] if ndim else 1
    if not 1 <= k <= length:
        raise OutOfRangeError(f"kthvalue(): selected number k={k} out of range for dimension {dim} of size "
                              f"{length} ({describe(x)})")


def _kthvalue_meta(x, k, dim, keepdim=False):
    out = reduced(shape(x), (dim,) if shape(x) else (), keepdim)
    return out, out


def _order_samples(make, dtype):
    yield Sample((make((3, 5)), 1), note="dim=1")
    yield Sample((make((4, 3), noncontiguous=True), 0, True), note="dim=0, keepdim")
    yield Sample((make((2, 1, 3)), -1), note="dim=-1")
    yield Sample((make(()), 0), note="0-d")


def _kthvalue_samples(make, dtype):
    yield Sample((make((3, 5)), 2), note="k=2 of the last dim")
    yield Sample((make((4, 3), noncontiguous=True), 4, 0, True), note="k=4, dim=0, keepdim")
    yield Sample((make((2, 3)), 1, -1), note="the minimum")
    yield Sample((make(()), 1), note="0-d")


def _with_nans_samples(make, dtype):
    """Rows with no NaN, one NaN and only NaN (float dtypes), besides the ordinary samples."""
    yield from _order_samples(make, dtype)
    if dtype.is_floating_point:
        x = make((3, 4))
        nan = F.full((), float("nan"), dtype=dtype, device=x.device)
        one_nan = F.where(F.eq(F.arange(4, device=x.device), 2), nan, F.slice(x, 0, 1, 2))
        rows = [F.slice(x, 0, 0, 1), one_nan, F.full((1, 4), float("nan"), dtype=dtype, device=x.device)]
        yield Sample((F.cat(rows, 0), 1), note="rows with no, one and only NaN")


defop("kthvalue(Tensor input, int k, dim? dim=None, bool keepdim=False)", "reduction", kind="composite",
      promotion=rules.with_indices, dtypes="numeric", outputs=("values", "indices"), normalize=_kthvalue_normalize,
      meta=_kthvalue_meta, composite=_kthvalue, derivative=_selected_derivative, samples=_kthvalue_samples,
      reference=lambda x, k, dim=-1, keepdim=False: _per_row(lambda row: _kth_of_row(row, k - 1))(x, dim, keepdim),
      doc="the k-th smallest value along dim (the last by default) and its index; NaN counts as the largest")
defop("median(Tensor input, dim dim, bool keepdim=False)", "reduction", kind="composite",
      promotion=rules.with_indices, dtypes="numeric", outputs=("values", "indices"), meta=_dim_pair_meta("median"),
      composite=_median, derivative=_selected_derivative, samples=_with_nans_samples,
      reference=_per_row(_median_of_row),
      doc="the lower median along dim and its index; NaN where the row holds one; ember.median(x) takes all")
defop("nanmedian(Tensor input, dim dim, bool keepdim=False)", "reduction", kind="composite",
      promotion=rules.with_indices, dtypes="numeric", outputs=("values", "indices"),
      meta=_dim_pair_meta("nanmedian"), composite=lambda x, dim, keepdim=False: _median(x, dim, keepdim, True),
      derivative=_selected_derivative, samples=_with_nans_samples,
      reference=_per_row(lambda row: _median_of_row(row, ignore_nan=True)),
      doc="the lower median of the values that are not NaN (NaN for a row of NaN, at index 0)")
defop("mode(Tensor input, dim dim=-1, bool keepdim=False)", "reduction", kind="composite",
      promotion=rules.with_indices, dtypes="numeric", outputs=("values", "indices"), meta=_dim_pair_meta("mode"),
      composite=_mode, derivative=_selected_derivative, samples=_order_samples, reference=_per_row(_mode_of_row),
      doc="the most frequent value along dim (the smallest of ties) and its last index; memory grows with the "
          "square of the dim's length")
defop("msort(Tensor input)", "reduction", kind="composite",
      promotion=refusing_complex(rules.same, "Sort does not support complex dtypes on CPU"),
      meta=lambda x: shape(x), composite=lambda x: F.sort(x, 0).values,
      samples=lambda make, dtype: iter([Sample((make((4, 3)),)), Sample((make((5,), noncontiguous=True),)),
                                        Sample((make(()),), note="0-d")]),
      reference=lambda x: np.sort(x, axis=0, kind="stable") if np.ndim(x) else np.array(x),
      doc="sort(input, dim=0).values")
