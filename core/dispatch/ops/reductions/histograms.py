"""Counting into bins: searchsorted, bucketize, bincount, histc, histogram and histogramdd.

searchsorted is one stable sort of the boundaries together with the values, then a running count of the
boundaries seen: O((n + m) log(n + m)) on any backend, batched. The histograms bin with it and count with
scatter_add. None of these is differentiable, as in PyTorch.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ...schema import rules
from ...schema.dtypes import float32, float64, int32, int64
from ...schema.binding import int_argument, tensor_argument
from ...schema.errors import ArgumentError, DtypeError, ShapeError, describe
from ...schema.meta import shape
from ...schema.promotion import result_type_of
from ...schema import Sample, defop
from ..namespace import F
from .histogram_onnx import bincount_onnx, histc_onnx, histogram_onnx


def _is_tensor(v) -> bool:
    return hasattr(v, "_data")


# -- searchsorted and bucketize ----------------------------------------------------------------------------

def _side_is_right(op_name: str, right: bool, side) -> bool:
    if side is None:
        return right
    if side not in ("left", "right"):
        raise ArgumentError(f"{op_name}: side can only be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise ArgumentError(f"{op_name}: side and right can't be set to opposites, got side of left while right "
                            f"was True")
    return side == "right"


def _indices_promotion(rt, op, args):
    return rt, int32 if args["out_int32"] else int64


def _searchsorted_normalize(op, args) -> None:
    boundaries, values, sorter = args["sorted_sequence"], args["values"], args["sorter"]
    _side_is_right("searchsorted", args["right"], args["side"])
    sb, sv = shape(boundaries), shape(values)
    if not sb:
        raise ShapeError(f"searchsorted: boundaries tensor should have at least 1 dimension, got "
                         f"{describe(boundaries)}")
    if len(sb) > 1 and (len(sv) != len(sb) or sv[:-1] != sb[:-1]):
        raise ShapeError(f"searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                         f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                         f"{list(sb)} and input value tensor {list(sv)}")
    if sorter is not None:
        if shape(sorter) != sb:
            raise ShapeError(f"searchsorted: boundary and sorter must have the same size, got {describe(boundaries)}"
                             f" and {describe(sorter)}")
        if sorter.dtype is not int64:
            raise DtypeError(f"searchsorted: sorter must be a tensor of long dtype, got {describe(sorter)}")


def search_sorted(boundaries, values, right: bool = False):
    """For each value (last dim of ``values``, batched like ``boundaries`` or against 1-D boundaries), how many
    boundaries lie before it: strictly below (left) or at most equal (right). int64."""
    one_row = boundaries.ndim == 1
    rows = F.reshape(values, (1, -1)) if one_row else values
    edges = F.unsqueeze(boundaries, 0) if one_row else boundaries
    if tuple(rows.shape[:-1]) != tuple(edges.shape[:-1]):
        edges = F.expand(edges, tuple(rows.shape[:-1]) + (edges.shape[-1],))
    n, m = edges.shape[-1], rows.shape[-1]
    # equal keys keep their order in a stable sort: boundaries first counts them as before the value (right)
    joined = F.cat([edges, F.to_dtype(rows, edges.dtype)] if right else [F.to_dtype(rows, edges.dtype), edges], -1)
    order = F.argsort(joined, -1, stable=True)
    from_boundaries = F.lt(order, n) if right else F.ge(order, m)
    seen = F.cumsum(F.to_dtype(from_boundaries, int64), -1)
    counts = F.scatter(F.zeros(tuple(joined.shape), dtype=int64, device=joined.device), -1, order, seen)
    counts = F.slice(counts, -1, n) if right else F.slice(counts, -1, 0, m)
    return F.reshape(counts, tuple(values.shape))


def _common_dtype_pair(boundaries, values):
    """Both operands in their promoted dtype (values may be a Python number)."""
    if _is_tensor(values):
        dtype = result_type_of([boundaries.dtype] + ([values.dtype] if values.ndim else []),
                               [] if values.ndim else [values.dtype])
    else:
        dtype = result_type_of([boundaries.dtype], (), [values])
        values = F.full((), values, dtype=dtype, device=boundaries.device)
    cast = lambda t: t if t.dtype is dtype else F.to_dtype(t, dtype)  # noqa: E731
    return cast(boundaries), cast(values)


def _searchsorted(sorted_sequence, values, out_int32=False, right=False, side=None, sorter=None):
    right = _side_is_right("searchsorted", right, side)
    if sorter is not None:
        sorted_sequence = F.gather(sorted_sequence, -1, sorter)
    boundaries, values = _common_dtype_pair(sorted_sequence, values)
    out = search_sorted(boundaries, values, right)
    return F.to_dtype(out, int32) if out_int32 else out


def _searchsorted_reference(boundaries, values, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    dtype = np.int32 if out_int32 else np.int64
    if boundaries.ndim == 1:
        return np.searchsorted(boundaries, values, side, sorter).astype(dtype)
    rows_b, rows_v = boundaries.reshape(-1, boundaries.shape[-1]), values.reshape(-1, values.shape[-1])
    rows_s = None if sorter is None else sorter.reshape(rows_b.shape)
    out = [np.searchsorted(b, v, side, None if rows_s is None else rows_s[i])
           for i, (b, v) in enumerate(zip(rows_b, rows_v))]
    return np.array(out, dtype).reshape(values.shape)


def _sorted_rows(make, shape_):
    """Sorted samples; complex ones (which these ops refuse, and which have no order) as drawn."""
    values = make(shape_)
    return values if values.dtype.is_complex else F.sort(values, -1).values


def _searchsorted_samples(make, dtype):
    edges = _sorted_rows(make, (6,))
    yield Sample((edges, make((3, 4))))
    yield Sample((edges, F.cat([F.slice(edges, 0, 1, 4), make((2,))], 0)), {"right": True}, note="ties, right")
    yield Sample((edges, F.slice(edges, 0, 2, 5)), {"side": "left", "out_int32": True}, note="ties, int32")
    yield Sample((_sorted_rows(make, (2, 5)), make((2, 3), noncontiguous=True)), note="batched")
    unsorted = make((5,))
    sorter = F.argsort(F.real(unsorted) if unsorted.dtype.is_complex else unsorted, stable=True)
    yield Sample((unsorted, make((4,))), {"sorter": sorter}, note="sorter")


defop("searchsorted(Tensor sorted_sequence, Tensor values, *, bool out_int32=False, bool right=False, str? side=None, "
      "Index? sorter=None)", "indexing", kind="composite", promotion=_indices_promotion, dtypes="numeric",
      torch_keywords={"input": "values"}, number_operands=("values",),
      meta=lambda b, v, *rest: shape(v), normalize=_searchsorted_normalize, composite=_searchsorted,
      reference=_searchsorted_reference, samples=_searchsorted_samples, differentiable=False, method=False,
      doc="where each value would go in the sorted innermost dim of sorted_sequence to keep it sorted")


def _bucketize_normalize(op, args) -> None:
    if len(shape(args["boundaries"])) != 1:
        raise ShapeError(f"bucketize: boundaries tensor must be 1 dimension, but got {describe(args['boundaries'])}")


def _bucketize(input, boundaries, out_int32=False, right=False):
    return _searchsorted(boundaries, input, out_int32, right)


def _bucketize_samples(make, dtype):
    edges = _sorted_rows(make, (5,))
    yield Sample((make((3, 4)), edges))
    yield Sample((F.slice(edges, 0, 1, 4), edges), {"right": True, "out_int32": True}, note="on the boundaries")
    yield Sample((make(()), edges), note="0-d")


defop("bucketize(Tensor input, Tensor boundaries, *, bool out_int32=False, bool right=False)", "indexing",
      number_operands=("input",), kind="composite", promotion=_indices_promotion, dtypes="numeric",
      meta=lambda x, *rest: shape(x),
      normalize=_bucketize_normalize, composite=_bucketize, samples=_bucketize_samples, differentiable=False,
      reference=lambda x, b, out_int32=False, right=False: _searchsorted_reference(b, x, out_int32, right),
      doc="the index of each input's bucket among the 1-D sorted boundaries")


# -- bincount --------------------------------------------------------------------------------------------

def _bincount_promotion(rt, op, args):
    """Counts are int64; weighted, PyTorch sums float32 weights in float32 and any other weights in float64."""
    weights = args["weights"]
    if weights is None:
        return None, int64
    return None, float32 if getattr(weights, "dtype", None) is float32 else float64


def _bincount_normalize(op, args) -> None:
    x, weights = args["input"], args["weights"]
    if weights is not None:
        tensor_argument("bincount", "weights", weights, 1)
    if len(shape(x)) != 1 or x.dtype.is_floating_point or x.dtype.name == "bool":
        raise ShapeError(f"bincount: only supports 1-d non-negative integral inputs, got {describe(x)}")
    if weights is not None and shape(weights) != shape(x):
        raise ShapeError(f"bincount: weights should be 1-d and have the same length as input, got {describe(x)} "
                         f"and {describe(weights)}")
    if args["minlength"] < 0:
        raise ArgumentError(f"bincount: minlength should be >= 0, got {args['minlength']}")
    if x.numel() and F.amin(x).item() < 0:
        raise ArgumentError(f"bincount: only supports 1-d non-negative integral inputs, got negative values in "
                            f"{describe(x)}")


def _bincount(input, weights=None, minlength=0):
    largest = F.amax(input).item() if input.numel() else -1
    size = max(largest + 1, minlength)
    dtype = int64 if weights is None else float32 if weights.dtype is float32 else float64
    counts = F.zeros((size,), dtype=dtype, device=input.device)
    source = F.ones(tuple(input.shape), dtype=dtype, device=input.device) if weights is None else \
        F.to_dtype(weights, dtype)
    return F.scatter_add(counts, 0, F.to_dtype(input, int64), source)


def _bincount_reference(x, weights=None, minlength=0):
    out = np.bincount(x, weights, minlength)
    return out.astype(np.int64 if weights is None else np.float32 if weights.dtype == np.float32 else np.float64)


def _bincount_samples(make, dtype):
    x = make((8,), dtype=int64, low=0, high=6)
    yield Sample((x,))
    yield Sample((x, make((8,))), note="weights")
    yield Sample((make((3,), dtype=int64, low=0, high=3),), {"minlength": 6}, note="minlength")
    yield Sample((make((0,), dtype=int64),), note="empty")


defop("bincount(Index input, Tensor? weights=None, int minlength=0)", "indexing", kind="composite",
      promotion=_bincount_promotion, meta=lambda x, *rest: (None,), normalize=_bincount_normalize,
      composite=_bincount, reference=_bincount_reference, onnx=bincount_onnx, samples=_bincount_samples,
      differentiable=False,
      doc="how often each non-negative integer occurs (or the sum of its weights); the length depends on the data")


# -- histc, histogram, histogramdd ---------------------------------------------------------------------------

def _outer_edges(op_name: str, x, low, high) -> tuple[float, float]:
    """The histogram's range: the given one, else the data's (widened when it is one point, as PyTorch does)."""
    if low is None:
        if x.numel():
            low, high = F.amin(x).item(), F.amax(x).item()
        else:
            low, high = 0.0, 0.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ArgumentError(f"{op_name}: range of [{low}, {high}] is not finite ({describe(x)})")
    if low > high:
        raise ArgumentError(f"{op_name}: max must be larger than min, got range [{low}, {high}] ({describe(x)})")
    return low, high


def bin_counts(samples, edges: list, weight=None):
    """Counts (or summed weights) of the rows of ``samples`` (N, D) in the D-dim grid of bins that ``edges`` (one
    increasing 1-D tensor per dim) bound. The last bin of each dim includes its right edge; rows outside are
    left out, NaNs too."""
    sizes = [e.shape[0] - 1 for e in edges]
    flat, inside = None, None
    for d, e in enumerate(edges):
        column = F.select(samples, 1, d)
        index = F.sub(search_sorted(e, column, right=True), 1)
        on_last_edge = F.eq(column, F.select(e, 0, -1))
        index = F.where(on_last_edge, sizes[d] - 1, index)
        within = F.logical_and(F.ge(column, F.select(e, 0, 0)), F.le(column, F.select(e, 0, -1)))
        inside = within if inside is None else F.logical_and(inside, within)
        index = F.clamp(index, 0, max(sizes[d] - 1, 0))
        flat = index if flat is None else F.add(F.mul(flat, sizes[d]), index)
    dtype = samples.dtype
    amount = F.to_dtype(inside, dtype) if weight is None else F.where(inside, F.to_dtype(weight, dtype), 0)
    total = math.prod(sizes)
    if total == 0:
        return F.zeros(tuple(sizes), dtype=dtype, device=samples.device)
    counts = F.scatter_add(F.zeros((total,), dtype=dtype, device=samples.device), 0, flat, amount)
    return F.reshape(counts, tuple(sizes))


def _as_density(hist, edges: list):
    """Counts divided by the total and by each bin's volume, so the histogram integrates to 1."""
    volume = None
    for d, e in enumerate(edges):
        width = F.reshape(F.diff(e), tuple(-1 if k == d else 1 for k in range(len(edges))))
        volume = width if volume is None else F.mul(volume, width)
    return F.div(F.div(hist, F.sum(hist)), volume)


def _histc_normalize(op, args) -> None:
    if args["bins"] <= 0:
        raise ArgumentError(f"histc: bins must be > 0, got {args['bins']}")


def _histc(input, bins=100, min=0, max=0):
    """bin = floor((x - min) * bins / (max - min)), x == max in the last bin; computed in float64 so that every
    floating dtype puts a value in the same bin."""
    low, high = _outer_edges("histc", input, *((None, None) if min == max else (float(min), float(max))))
    if low == high:
        low, high = low - 1, high + 1
    x = F.reshape(input, (-1,))
    wide = x if x.dtype is float64 else F.to_dtype(x, float64)
    inside = F.logical_and(F.ge(wide, low), F.le(wide, high))
    index = F.clamp(F.to_dtype(F.floor(F.mul(F.sub(wide, low), bins / (high - low))), int64), 0, bins - 1)
    return F.scatter_add(F.zeros((bins,), dtype=x.dtype, device=x.device), 0, index, F.to_dtype(inside, x.dtype))


def _histc_reference(x, bins=100, min=0, max=0):
    x = x.reshape(-1)
    low, high = (float(min), float(max)) if min != max else ((x.min(), x.max()) if x.size else (0.0, 0.0))
    if low == high:
        low, high = low - 1, high + 1
    inside = x[(x >= low) & (x <= high)]
    index = np.clip(np.floor((inside - low) * (bins / (high - low))).astype(np.int64), 0, bins - 1)
    return np.bincount(index, minlength=bins).astype(x.dtype)


def _histc_samples(make, dtype):
    yield Sample((make((20,)), 5))
    yield Sample((make((3, 4), noncontiguous=True), 4, -0.5, 0.5), note="range cuts values off")
    yield Sample((F.full((3,), 2, dtype=dtype, device=make((1,)).device), 3), note="one point")


defop("histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0)", "indexing", kind="composite",
      promotion=rules.same, dtypes="float", meta=lambda x, bins=100, *rest: (bins,), normalize=_histc_normalize,
      composite=_histc, reference=_histc_reference, onnx=histc_onnx, samples=_histc_samples, differentiable=False,
      doc="counts in bins equal-width bins between min and max (the data's range when min == max)")


def _bin_edges(op_name: str, x, bins, low_high, dtype):
    """The edges of one dim: the given increasing tensor, or bins + 1 equal steps over the range."""
    if _is_tensor(bins):
        if bins.ndim != 1 or bins.shape[0] < 1:
            raise ShapeError(f"{op_name}: bins tensor should have one dimension and at least 1 element, got "
                             f"{describe(bins)}")
        return bins if bins.dtype is dtype else F.to_dtype(bins, dtype)
    if not isinstance(bins, int) or isinstance(bins, bool) or bins <= 0:
        raise ArgumentError(f"{op_name}: bins must be a positive int or a 1-D tensor of edges, got {bins!r}")
    if low_high is None and not x.numel():
        low, high = 0.0, 1.0
    else:
        low, high = _outer_edges(op_name, x, *(low_high or (None, None)))
    if low == high:
        low, high = low - 0.5, high + 0.5
    return F.linspace(low, high, bins + 1, dtype=dtype, device=x.device)


def _range_pair(op_name: str, range_):
    if range_ is None:
        return None
    if not isinstance(range_, (list, tuple)) or len(range_) != 2:
        raise ArgumentError(f"{op_name}: range must be a pair (min, max), got {range_!r}")
    return float(range_[0]), float(range_[1])


def _histogram_normalize(op, args) -> None:
    x, weight = args["input"], args["weight"]
    if weight is not None and shape(weight) != shape(x):
        raise ShapeError(f"histogram: weight should have the same shape as input, got {describe(x)} and "
                         f"{describe(weight)}")
    bins = args["bins"]
    if not _is_tensor(bins):  # an int, or PyTorch's TypeError naming the argument
        args["bins"] = bins = int_argument("histogram", "bins", bins, 2)
    if _is_tensor(bins) and bins.dtype is not x.dtype:
        raise DtypeError(f"histogram: input and bins should have the same dtype, got {describe(x)} and "
                         f"{describe(bins)}")


def _histogram_meta(x, bins=100, range_=None, weight=None, density=False):
    count = shape(bins)[0] - 1 if _is_tensor(bins) and shape(bins) else bins
    return (count,), (count + 1,)


def _histogram(input, bins=100, range_=None, weight=None, density=False):
    edges = _bin_edges("histogram", input, bins, _range_pair("histogram", range_), input.dtype)
    hist = bin_counts(F.reshape(input, (-1, 1)), [edges], None if weight is None else F.reshape(weight, (-1,)))
    return (_as_density(hist, [edges]) if density else hist), edges


def _histogram_reference(x, bins=100, range=None, weight=None, density=False):  # noqa: A002 (PyTorch's name)
    hist, edges = np.histogram(x, bins, range, density=density, weights=weight)
    return hist.astype(x.dtype), edges.astype(x.dtype)


def _histogram_samples(make, dtype):
    yield Sample((make((20,)), 4))
    yield Sample((make((3, 5), noncontiguous=True), 3), {"range": (-0.5, 0.5), "weight": make((3, 5))},
                 note="range and weight")
    yield Sample((make((12,)), _sorted_rows(make, (4,))), {"density": True}, note="given edges, density")


defop("histogram(Tensor input, Any bins=100, *, Any range=None, Tensor? weight=None, bool density=False)", "indexing",
      kind="composite", promotion=lambda rt, op, args: (rt, (rt, rt)), dtypes="float", meta=_histogram_meta,
      normalize=_histogram_normalize, composite=_histogram, reference=_histogram_reference,
      onnx=histogram_onnx,
      samples=_histogram_samples, outputs=("hist", "bin_edges"), differentiable=False,
      doc="counts (or summed weights, or a density) of input in bins: a number of equal bins or their edges")


def _histogramdd_normalize(op, args) -> None:
    x, edges, weight = args["input"], args["bin_edges"], args["weight"]
    if len(shape(x)) < 1 or (shape(x)[-1] if shape(x) else 0) != len(edges):
        raise ShapeError(f"_histogramdd_from_bin_tensors: expected input with {len(edges)} columns (one per tensor "
                         f"of bin edges), got {describe(x)}")
    if weight is not None and shape(weight) != shape(x)[:-1]:
        raise ShapeError(f"_histogramdd_from_bin_tensors: weight should have the input's shape without its last "
                         f"dim, got {describe(weight)} for {describe(x)}")


def _histogramdd_from_bin_tensors(input, bin_edges, weight=None, density=False):
    samples = F.reshape(input, (-1, input.shape[-1]))
    hist = bin_counts(samples, list(bin_edges), None if weight is None else F.reshape(weight, (-1,)))
    return _as_density(hist, list(bin_edges)) if density else hist


def _histogramdd_reference(x, bin_edges, weight=None, density=False):
    samples = x.reshape(-1, x.shape[-1])
    hist, _ = np.histogramdd(samples, list(bin_edges), density=density,
                             weights=None if weight is None else weight.reshape(-1))
    return hist.astype(x.dtype)


def _histogramdd_samples(make, dtype):
    yield Sample((make((10, 2)), [_sorted_rows(make, (3,)), _sorted_rows(make, (4,))]))
    yield Sample((make((2, 4, 1), noncontiguous=True), [_sorted_rows(make, (5,))]),
                 {"weight": make((2, 4)), "density": True}, note="batched samples, weight, density")


defop("_histogramdd_from_bin_tensors(Tensor input, Tensor[] bin_edges, *, Tensor? weight=None, bool density=False)",
      "indexing", kind="composite", promotion=rules.same, dtypes="float", normalize=_histogramdd_normalize,
      meta=lambda x, edges, *rest: tuple(shape(e)[0] - 1 for e in edges), composite=_histogramdd_from_bin_tensors,
      reference=_histogramdd_reference, samples=_histogramdd_samples, differentiable=False, method=False,
      doc="histogramdd's counting: the last dim of input holds the coordinates, one tensor of edges per coordinate")

histogramdd_result = namedtuple("histogramdd", ("hist", "bin_edges"))


def histogramdd(input, bins=None, range=None, weight=None, density: bool = False):  # noqa: A002 (PyTorch's name)
    """torch.histogramdd: the D-dim histogram of the points in input's last dim. ``bins``: one int for every dim,
    an int per dim, or a 1-D tensor of edges per dim; ``range``: (min0, max0, min1, max1, ...)."""
    tensor_argument("histogramdd", "input", input, position=1)
    if input.ndim < 2:
        raise ShapeError(f"histogramdd: input should have at least 2 dimensions, got {describe(input)}")
    dims = input.shape[-1]
    if bins is None:
        raise TypeError("histogramdd() missing required argument 'bins'")
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * dims
    for i, b in enumerate(per_dim):  # ints (NumPy's too) or tensors of edges, as PyTorch's overloads take
        if _is_tensor(b) and b.ndim == 0:
            b = b.item()
        if not _is_tensor(b):
            per_dim[i] = int_argument("histogramdd", "bins", b, position=2)
    if len(per_dim) != dims:
        raise ArgumentError(f"histogramdd: expected {dims} bin specifications (one per dim of the points), got "
                            f"{len(per_dim)}")
    if range is not None and len(range) != 2 * dims:
        raise ArgumentError(f"histogramdd: range should have {2 * dims} elements (min and max per dim), got {range!r}")
    points = F.reshape(input, (-1, dims))
    edges = [_bin_edges("histogramdd", F.select(points, 1, d), b,
                        None if range is None else (float(range[2 * d]), float(range[2 * d + 1])), input.dtype)
             for d, b in enumerate(per_dim)]
    hist = F._histogramdd_from_bin_tensors(input, edges, weight=weight, density=density)
    return histogramdd_result(hist, tuple(edges))


FUNCTIONS = {"histogramdd": histogramdd}
