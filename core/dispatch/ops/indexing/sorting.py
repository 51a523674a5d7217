"""Sorting: the sort primitive (stable; NaN sorts as the largest value), argsort and topk built on it."""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import bool_, int64
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from ._shared import _size
from .._shared import _with_size
from ..onnx_support import as_ordered, rank, size_of


# -- sorting --------------------------------------------------------------------------------------

def _sort_reference_1d(row, descending):
    keys = [(v != v, 0 if v != v else v) for v in row.tolist()]  # v != v: NaN, sorted as the largest
    return sorted(range(len(row)), key=keys.__getitem__, reverse=descending)  # sorted() is stable both ways


def _sort_reference(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = np.apply_along_axis(_sort_reference_1d, dim, x, descending).astype(np.int64).reshape(x.shape)
    return np.take_along_axis(x, order, dim), order


def _with_nans(make, dtype, shape_):
    """A sample input with NaNs (for float dtypes) and repeated values, to check order and stability."""
    x = make(shape_)
    x = F.cat([x, x], -1)
    if not dtype.is_floating_point:
        return x
    return F.where(make(tuple(x.shape), dtype=bool_), F.full((), math.nan, dtype=dtype, device=x.device), x)


def _sort_samples(make, dtype):
    yield Sample((make((4, 5)),))
    yield Sample((_with_nans(make, dtype, (3, 4)), -1, True), note="descending, ties and NaN")
    yield Sample((_with_nans(make, dtype, (3, 4)), 0), {"stable": True}, note="ties and NaN")
    yield Sample((make((2, 3, 4), noncontiguous=True), 1, True))
    yield Sample((make((0, 3)), 0), note="empty")
    yield Sample((make(()),), note="0-d")


def _sort_meta(x, dim=-1, descending=False, stable=False):
    return shape(x), shape(x)


def _sort_derivative(grads, input, dim, results):
    """Each sorted value's gradient goes back to where that value came from."""
    if not tuple(input.shape):
        return grads[0]
    return F.scatter(F.zeros_like(input, dtype=grads[0].dtype), dim, results[1], grads[0])


def _top_k(g, input, k, dim, largest):
    """TopK, sorted: ties keep the lower index first and NaN counts as the largest value, as Ember's stable
    sort; bools sort as int32 (no bool kernel). A 0-d input is its own result, at index 0."""
    dtype = g.compute
    if not rank(g, input):
        return g.op("Identity", input), g.const(0, int64)
    values, indices = g.op("TopK", as_ordered(g, input, dtype), k, axis=dim, largest=int(largest), sorted=1,
                           outputs=2)
    return (g.cast(values, dtype) if dtype is bool_ else values), indices


def _sort_onnx(g, input, dim=-1, descending=False, stable=False):
    """TopK over the whole length of dim."""
    length = size_of(g, input, dim) if rank(g, input) else None
    return _top_k(g, input, length, dim, descending)


def _argsort_onnx(g, input, dim=-1, descending=False, stable=False):
    return _sort_onnx(g, input, dim, descending)[1]


def _topk_onnx(g, input, k, dim=-1, largest=True, sorted=True):
    return _top_k(g, input, g.ints([k]), dim, largest)


defop("sort(Tensor input, dim dim=-1, bool descending=False, *, bool stable=False)", "indexing",
      onnx=_sort_onnx,
      promotion=refusing_complex(rules.with_indices, "Sort does not support complex dtypes on CPU"),
      meta=_sort_meta, reference=_sort_reference, samples=_sort_samples,
      derivative=_sort_derivative,
      outputs=("values", "indices"), batch="dims",
      doc="values and int64 indices sorted along dim; always stable; NaN sorts as the largest value")


defop("argsort(Tensor input, dim dim=-1, bool descending=False, *, bool stable=False)", "indexing",
      kind="composite", promotion=refusing_complex(rules.to_int64, "Sort does not support complex dtypes on CPU"),
      meta=lambda x, *rest: shape(x),
      composite=lambda x, dim=-1, descending=False, stable=False: F.sort(x, dim, descending).indices,
      onnx=_argsort_onnx,
      reference=lambda x, dim=-1, descending=False, stable=False: _sort_reference(x, dim, descending)[1],
      samples=_sort_samples, differentiable=False, doc="the indices that sort input along dim (stable)")


def _topk_meta(x, k, dim=-1, largest=True, sorted=True):
    size = _size(shape(x), dim)
    require(0 <= k <= size, "topk", f"k={k} is out of range for dim {dim} of size {size}", x)
    out = _with_size(shape(x), dim, k)
    return out, out


def _topk(x, k, dim=-1, largest=True, sorted=True):
    values, indices = F.sort(x, dim, largest)
    if x.ndim == 0:
        return values, indices
    return F.slice(values, dim, 0, k), F.slice(indices, dim, 0, k)


def _topk_reference(x, k, dim=-1, largest=True, sorted=True):
    values, indices = _sort_reference(x, dim, largest)
    if x.ndim == 0:
        return values, indices
    window = (slice(None),) * (dim % x.ndim) + (slice(0, k),)
    return values[window], indices[window]


def _topk_samples(make, dtype):
    yield Sample((make((4, 6)), 2))
    yield Sample((_with_nans(make, dtype, (3, 10)), 3, -1, True), note="ties and NaN")
    yield Sample((_with_nans(make, dtype, (3, 10)), 4, 1, False), note="smallest, ties and NaN")
    yield Sample((make((5, 3), noncontiguous=True), 5, 0), note="k = size")
    yield Sample((make((3, 4)), 0), note="k = 0")
    yield Sample((make(()), 1), note="0-d")


defop("topk(Tensor input, int k, dim dim=-1, bool largest=True, bool sorted=True)", "indexing",
      kind="composite", promotion=refusing_complex(rules.with_indices, "topk does not support complex dtypes on CPU"),
      dtypes="numeric", meta=_topk_meta, composite=_topk,
      onnx=_topk_onnx,
      reference=_topk_reference, samples=_topk_samples, outputs=("values", "indices"),
      doc="the k largest (or smallest) values along dim and their indices, always in sorted order; "
          "ties keep the lower index first")
