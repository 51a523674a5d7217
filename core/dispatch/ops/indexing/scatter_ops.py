"""Writing into copies: index_copy/fill/reduce, index_put, put, take, masked_scatter, scatter_reduce and the
``*_scatter`` ops (the inverses of slicing views).

All are composites over ``index_put_``, ``index``, ``gather`` and ``sort``, so they run on every backend and
their derivatives follow from those parts: a position written gets no gradient from the input, and each
written value gets the gradient at the position it lands on (PyTorch's formulas). The reductions of
``scatter_reduce``/``index_reduce`` other than sum and mean run as a segmented scan over the values sorted by
target, log2(n) elementwise steps, which is exact for integers and propagates NaN as PyTorch does.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.binding import tensor_argument
from ...schema.dtypes import SCALAR_TYPE_NAMES, bool_, int64
from ...schema.errors import (ArgumentError, DtypeError, OutOfRangeError, ShapeError, UnsupportedDtypeError, describe,
                              describe_all)
from ...schema.meta import broadcast_shapes, check_index, numel, require, require_dims, shape
from ...schema.overflow import check_fits
from ...schema import Sample, defop
from ..namespace import F
from . import transforms
from .indexing import check_index_vector
from ._shared import (_along_dim_normalize, _check_index_dtype, _check_mask_dtype, _check_range, _index_put_meta,
                      _index_put_reference, _index_put_samples, _normalize_indices, _scatter_meta, _size,
                      sort_keys)
from .._shared import _in_input_dtype, _is_tensor

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _along(x, dim: int, index) -> list:
    """The ``Index?[]`` list that indexes ``x`` with ``index`` along ``dim``."""
    return [None] * dim + [index]


def _zero(x):
    return F.zeros((), dtype=x.dtype, device=x.device)


def _index_vector_normalize(op, args):
    args["index"] = check_index_vector(op.name, args["input"], args["dim"], args["index"], args.get("source"))


def _index_copy_samples(make, dtype):
    def distinct(n, size):  # positions written once: otherwise which duplicate wins is unspecified
        return F.slice(F.argsort(sort_keys(make, (size,))), 0, 0, n)
    yield Sample((make((5,)), 0, distinct(3, 5), make((3,))))
    yield Sample((make((4, 5), noncontiguous=True), 1, distinct(3, 5), make((4, 3))), note="along dim 1")
    yield Sample((make((3, 2)), 0, distinct(0, 3), make((0, 2))), note="empty index")
    yield Sample((make(()), 0, make((), dtype=int64, low=0, high=1), make(())), note="0-d")


def _np_along(out: np.ndarray, dim: int, index) -> tuple:
    return (slice(None),) * (dim % max(out.ndim, 1)) + (np.reshape(index, -1),)


# -- index_copy, index_fill ---------------------------------------------------------------------------

def _index_copy(x, dim, index, source):
    if x.ndim == 0:
        return F.reshape(_index_copy(F.reshape(x, (1,)), 0, index, F.reshape(source, (1,))), ())
    return F.index_put_(F.clone(x), _along(x, dim, F.reshape(index, (-1,))), source)


def _index_copy_reference(x, dim, index, source):
    out = np.array(np.atleast_1d(x))
    out[_np_along(out, dim, index)] = np.atleast_1d(source)
    return out.reshape(np.shape(x))


defop("index_copy(Tensor input, dim dim, Index index, Tensor source)", "indexing", kind="composite",
      dtypes="all+complex", promotion=_in_input_dtype, meta=lambda x, dim, index, source: shape(x),
      normalize=_index_vector_normalize, composite=_index_copy, reference=_index_copy_reference,
      samples=_index_copy_samples, inplace=True,
      doc="a copy of input with source[..., i, ...] written at input[..., index[i], ...] along dim")


def _index_fill_normalize(op, args):
    x, value = args["input"], args["value"]
    args["index"] = check_index_vector("index_fill", x, args["dim"], args["index"])
    if _is_tensor(value) and shape(value):
        raise ShapeError(f"index_fill: value must be a number or a 0-d tensor, got {describe(value)}")
    if not _is_tensor(value):
        check_fits("index_fill", value, x._dtype)


def _index_fill(x, dim, index, value):
    """A mask of the filled slices (each once, however often index repeats them) chooses value over input."""
    if x.ndim == 0:
        return F.reshape(_index_fill(F.reshape(x, (1,)), 0, index, value), ())
    if not _is_tensor(value):
        value = F.full((), value, dtype=x.dtype, device=x.device)
    filled = F.index_put_(F.zeros((x.shape[dim],), dtype=bool_, device=x.device), [F.reshape(index, (-1,))],
                          F.ones((), dtype=bool_, device=x.device))
    spread = (1,) * dim + (x.shape[dim],) + (1,) * (x.ndim - dim - 1)
    return F.where(F.reshape(filled, spread), F.to_dtype(value, x.dtype), x)


def _index_fill_reference(x, dim, index, value):
    out = np.array(np.atleast_1d(x))
    out[_np_along(out, dim, index)] = np.asarray(value).astype(out.dtype)
    return out.reshape(np.shape(x))


def _index_fill_samples(make, dtype):
    def idx(n, size):
        return make((n,), dtype=int64, low=0, high=size)
    yield Sample((make((4, 5)), 1, idx(3, 5), make(())), note="0-d tensor value, repeated indices")
    yield Sample((make((4, 5), noncontiguous=True), 0, idx(2, 4), 1), note="a number")
    yield Sample((make((3,)), 0, idx(0, 3), make(())), note="empty index")
    yield Sample((make(()), 0, make((), dtype=int64, low=0, high=1), make(())), note="0-d")


defop("index_fill(Tensor input, dim dim, Index index, Tensor value)", "indexing", kind="composite",
      dtypes="all+complex", number_operands=("value",),
      promotion=_in_input_dtype, meta=lambda x, dim, index, value: shape(x), normalize=_index_fill_normalize,
      composite=_index_fill, reference=_index_fill_reference, samples=_index_fill_samples, inplace=True,
      doc="a copy of input with value (a number or 0-d tensor) at the entries of index along dim")


# -- index_put, put, take -----------------------------------------------------------------------------

defop("index_put(Tensor input, Index?[] indices, Tensor values, bool accumulate=False)", "indexing",
      kind="composite", promotion=_in_input_dtype, meta=_index_put_meta, normalize=_normalize_indices,
      composite=lambda x, indices, values, accumulate=False: F.index_put_(F.clone(x), indices, values, accumulate),
      dtypes="all+complex", reference=_index_put_reference, samples=_index_put_samples, batch=transforms.index_put,
      doc="the out-of-place index_put_: a copy of input with input[indices] = values (or += with accumulate)")


def _flat_index_normalize(op, args):
    """take and put index the flattened input: any shape of integer index, negatives counted from the end."""
    x, index = args["input"], args["index"]
    _check_index_dtype(op.name, index)
    size = numel(shape(x))
    if numel(shape(index)) and not size:
        raise OutOfRangeError(f"{op.name}: cannot index an empty tensor ({describe(x)}) with a non-empty index")
    args["index"] = _check_range(op.name, index, 0, size, negative_ok=True)


def _take_samples(make, dtype):
    yield Sample((make((3, 4)), make((2, 3), dtype=int64, low=-12, high=12)), note="negative indices")
    yield Sample((make((5,), noncontiguous=True), make((), dtype=int64, low=0, high=5)), note="0-d index")
    yield Sample((make((2, 3)), make((0,), dtype=int64, low=0, high=6)), note="empty index")
    yield Sample((make(()), make((3,), dtype=int64, low=-1, high=1)), note="0-d input")


defop("take(Tensor input, Index index)", "indexing", kind="composite", promotion=rules.passthrough,
      meta=lambda x, index: shape(index), normalize=_flat_index_normalize,
      composite=lambda x, index: F.index(F.reshape(x, (-1,)), [index]),
      reference=lambda x, index: np.take(np.reshape(x, -1), index), samples=_take_samples,
      doc="the elements of the flattened input at index (negatives from the end), in index's shape")


def _put_normalize(op, args):
    _flat_index_normalize(op, args)
    x, index = args["input"], args["index"]
    source = tensor_argument("put", "source", args["source"], 3)
    if source._dtype is not x._dtype:
        raise DtypeError(f"put: source must have input's dtype {x._dtype.name}, got {describe(source)}")
    if numel(shape(index)) != numel(shape(source)):  # an IndexError (and RuntimeError), as PyTorch's
        raise OutOfRangeError(f"put: index and source need the same number of elements, got "
                              f"{numel(shape(index))} and {numel(shape(source))}; {describe_all((index, source))}")


def _put(x, index, source, accumulate=False):
    flat = F.index_put_(F.clone(F.reshape(x, (-1,))), [F.reshape(index, (-1,))], F.reshape(source, (-1,)),
                        accumulate)
    return F.reshape(flat, tuple(x.shape))


def _put_reference(x, index, source, accumulate=False):
    out = np.array(x).reshape(-1)
    index, source = np.reshape(index, -1), np.reshape(source, -1).astype(out.dtype)
    if accumulate:
        np.add.at(out, index, source)
    else:
        out[index] = source
    return out.reshape(np.shape(x))


def _put_samples(make, dtype):
    positions = F.slice(F.argsort(sort_keys(make, (12,))), 0, 0, 5)
    yield Sample((make((3, 4)), F.sub(positions, 12), make((5,))), note="distinct negative positions")
    yield Sample((make((3, 4), noncontiguous=True), make((2, 4), dtype=int64, low=0, high=12), make((8,)), True),
                 note="accumulate with repeats")
    yield Sample((make((2,)), make((0,), dtype=int64, low=0, high=2), make((0,))), note="empty index")
    yield Sample((make(()), make((), dtype=int64, low=0, high=1), make(()), True), note="0-d")


defop("put(Tensor input, Index index, Tensor source, bool accumulate=False)", "indexing", kind="composite",
      dtypes="all+complex", promotion=_in_input_dtype, meta=lambda x, index, source, accumulate=False: shape(x),
      normalize=_put_normalize, composite=_put, reference=_put_reference, samples=_put_samples, inplace=True,
      doc="a copy of input with source written (or added, with accumulate) at index of the flattened input")


# -- take_along_dim, masked_scatter ------------------------------------------------------------------

def _take_along_dim_shapes(in_shape: tuple, index_shape: tuple, dim: int) -> tuple:
    """input's and indices' shapes broadcast against each other everywhere but along dim."""
    if len(in_shape) != len(index_shape):
        raise ShapeError(f"take_along_dim: input and indices should have the same number of dimensions, "
                         f"got shapes {in_shape} and {index_shape}")
    if not in_shape:
        return in_shape, index_shape
    rest = broadcast_shapes("take_along_dim", in_shape[:dim] + (1,) + in_shape[dim + 1:],
                            index_shape[:dim] + (1,) + index_shape[dim + 1:])
    return rest[:dim] + (in_shape[dim],) + rest[dim + 1:], rest[:dim] + (index_shape[dim],) + rest[dim + 1:]


def _take_along_dim_normalize(op, args):
    x, indices, dim = args["input"], args["indices"], args["dim"]
    _check_index_dtype("take_along_dim", indices, "indices")
    if dim is None:
        args["indices"] = _check_range("take_along_dim", indices, 0, numel(shape(x)), negative_ok=False)
        return
    _take_along_dim_shapes(shape(x), shape(indices), dim)
    args["indices"] = _check_range("take_along_dim", indices, dim, _size(shape(x), dim), negative_ok=False)


def _take_along_dim(x, indices, dim=None):
    if dim is None:
        flat = F.reshape(x, (-1,))
        return F.index(flat, [F.reshape(indices, (-1,))])
    if x.ndim == 0:
        return F.clone(x)
    x_shape, index_shape = _take_along_dim_shapes(tuple(x.shape), tuple(indices.shape), dim)
    return F.gather(F.expand(x, x_shape), dim, F.expand(indices, index_shape))


def _take_along_dim_meta(x, indices, dim=None):
    if dim is None:
        return (numel(shape(indices)),)
    return _take_along_dim_shapes(shape(x), shape(indices), dim)[1]


def _take_along_dim_reference(x, indices, dim=None):
    if dim is None:
        return np.take(np.reshape(x, -1), np.reshape(indices, -1))
    if np.ndim(x) == 0:
        return np.array(x)
    dim %= np.ndim(x)
    x_shape, index_shape = _take_along_dim_shapes(np.shape(x), np.shape(indices), dim)
    return np.take_along_axis(np.broadcast_to(x, x_shape), np.broadcast_to(indices, index_shape), dim)


def _take_along_dim_samples(make, dtype):
    yield Sample((make((3, 4)), make((3, 2), dtype=int64, low=0, high=4), 1))
    yield Sample((make((3, 4), noncontiguous=True), make((1, 4), dtype=int64, low=0, high=3), 0),
                 note="indices broadcast against input")
    yield Sample((make((2, 3)), make((5,), dtype=int64, low=0, high=6)), note="no dim: the flattened input")
    yield Sample((make((2, 1, 3)), make((2, 4, 3), dtype=int64, low=0, high=3), -1),
                 note="input broadcast against indices")


defop("take_along_dim(Tensor input, Index indices, dim? dim=None)", "indexing", kind="composite",
      promotion=rules.passthrough, meta=_take_along_dim_meta, normalize=_take_along_dim_normalize,
      composite=_take_along_dim, reference=_take_along_dim_reference, samples=_take_along_dim_samples,
      doc="the values of input at indices (non-negative, as gather's) along dim, the two broadcast elsewhere, "
          "as NumPy's take_along_axis; without dim, of the flattened input")


def _masked_scatter_normalize(op, args):
    x, mask, source = args["input"], args["mask"], args["source"]
    _check_mask_dtype("masked_scatter", mask)
    if source._dtype is not x._dtype:
        raise DtypeError(f"masked_scatter: source must have input's dtype {x._dtype.name}, got {describe(source)}")
    size = broadcast_shapes("masked_scatter", shape(x), shape(mask))
    if numel(size):
        chosen = F.sum(F.expand(mask, size)).item()
        require(chosen <= numel(shape(source)), "masked_scatter",
                f"the mask selects {chosen} elements but source has only {numel(shape(source))}", mask, source)


def _masked_scatter(x, mask, source):
    size = broadcast_shapes("masked_scatter", tuple(x.shape), tuple(mask.shape))
    flat = F.clone(F.reshape(F.expand(x, size), (-1,)))
    positions = F.reshape(F.argwhere(F.reshape(F.expand(mask, size), (-1,))), (-1,))
    values = F.slice(F.reshape(source, (-1,)), 0, 0, positions.shape[0])
    return F.reshape(F.index_put_(flat, [positions], values), size)


def _masked_scatter_reference(x, mask, source):
    size = np.broadcast_shapes(np.shape(x), np.shape(mask))
    out = np.array(np.broadcast_to(x, size))
    chosen = np.broadcast_to(mask, size)
    out[chosen] = np.reshape(source, -1)[:int(chosen.sum())]
    return out


def _masked_scatter_samples(make, dtype):
    yield Sample((make((3, 4)), make((3, 4), dtype=bool_), make((12,))), note="source as large as input")
    yield Sample((make((3, 4), noncontiguous=True), make((4,), dtype=bool_), make((5, 3))), note="broadcast mask")
    yield Sample((make((2,)), make((3, 2), dtype=bool_), make((7,))), note="the mask broadcasts input")
    yield Sample((make(()), make((), dtype=bool_), make((2,))), note="0-d")


defop("masked_scatter(Tensor input, Index mask, Tensor source)", "indexing", dtypes="all+complex", kind="composite",
      promotion=_in_input_dtype, meta=lambda x, mask, source: broadcast_shapes("masked_scatter", shape(x), shape(mask)),
      normalize=_masked_scatter_normalize, composite=_masked_scatter, reference=_masked_scatter_reference,
      samples=_masked_scatter_samples, inplace=True,
      doc="a copy of input with source's leading elements written, in order, where the bool mask is true")


# -- scatter_reduce, index_reduce --------------------------------------------------------------------

_COMBINE = {"prod": "mul", "amax": "maximum", "amin": "minimum"}


def _segmented_scan(values, segments, combine):
    """Inclusive scan of ``combine`` within runs of equal (sorted) segment ids: Hillis-Steele, log2(n) steps.
    After it, the last element of every run holds the reduction of the whole run."""
    n, step = values.shape[0], 1
    while step < n:
        earlier = F.cat([F.slice(values, 0, 0, step), F.slice(values, 0, 0, n - step)])
        same_run = F.cat([F.zeros((step,), dtype=bool_, device=values.device),
                          F.eq(F.slice(segments, 0, step), F.slice(segments, 0, 0, n - step))])
        values = F.where(same_run, combine(values, earlier), values)
        step *= 2
    return values


def _reduce_into(flat, targets, values, reduce: str, include_self: bool):
    """``flat`` (1-D) with ``values`` reduced into it at ``targets`` (1-D int64, repeats allowed)."""
    if not targets.shape[0]:
        return F.clone(flat)
    base = flat if include_self else F.index_put_(F.clone(flat), [targets], _zero(flat))
    if reduce in ("sum", "mean"):
        total = F.index_put_(F.clone(base), [targets], values, True)
        if reduce == "sum":
            return total
        counted = flat.dtype.to_real()  # a complex mean divides by a real count
        count = F.full(tuple(flat.shape), 1 if include_self else 0, dtype=counted, device=flat.device)
        count = F.maximum(F.index_put_(count, [targets], F.ones((), dtype=counted, device=flat.device), True),
                          F.ones((), dtype=counted, device=flat.device))
        return F.div(total, count) if flat.dtype.is_inexact else F.floor_divide(total, count)
    combine = getattr(F, _COMBINE[reduce])
    order = F.argsort(targets)
    runs, scanned = F.index(targets, [order]), _segmented_scan(F.index(values, [order]), F.index(targets, [order]),
                                                               combine)
    last = F.cat([F.ne(F.slice(runs, 0, 1), F.slice(runs, 0, 0, -1)), F.ones((1,), dtype=bool_, device=flat.device)])
    where_to, reduced = F.masked_select(runs, last), F.masked_select(scanned, last)
    if include_self:
        reduced = combine(F.index(flat, [where_to]), reduced)
    return F.index_put_(F.clone(flat), [where_to], reduced)


def _scatter_targets(x, dim: int, index, src):
    """Where each element of ``src`` (cut to index's shape) lands in the flattened input, and those elements."""
    in_shape, index_shape = tuple(x.shape) or (1,), tuple(index.shape) or (1,)
    strides = [1] * len(in_shape)
    for d in range(len(in_shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * in_shape[d + 1]
    target = F.mul(F.reshape(F.to_dtype(index, int64), index_shape), strides[dim])
    for d, size in enumerate(index_shape):
        if d != dim:
            along = F.arange(0, size * strides[d], strides[d], dtype=int64, device=x.device)
            target = F.add(target, F.reshape(along, (1,) * d + (size,) + (1,) * (len(index_shape) - d - 1)))
    values = F.reshape(src, (1,)) if not tuple(src.shape) else src
    for d, size in enumerate(index_shape):
        values = F.slice(values, d, 0, size)
    return F.reshape(target, (-1,)), F.reshape(values, (-1,))


def _scatter_reduce(x, dim, index, src, reduce, include_self=True):
    targets, values = _scatter_targets(x, dim, index, src)
    return F.reshape(_reduce_into(F.reshape(x, (-1,)), targets, values, reduce, include_self), tuple(x.shape))


def _check_reduce(op_name: str, reduce, allowed=REDUCTIONS) -> None:
    if reduce not in allowed:
        raise ArgumentError(f"{op_name}: reduce must be one of {', '.join(map(repr, allowed))}, got {reduce!r}")


def _refuse_complex_extrema(op, args, target: str) -> None:
    """amax and amin order values, which complex numbers have not (PyTorch: "..._reduce_amax" not implemented for
    'ComplexFloat'); sum, prod and mean take complex."""
    dtype = args[target].dtype
    if dtype.is_complex and args["reduce"] in ("amax", "amin"):
        raise UnsupportedDtypeError(f"{op.name}: reduce='{args['reduce']}' not implemented for "
                                    f"'{SCALAR_TYPE_NAMES[dtype]}' ({describe(args[target])})")


def _scatter_reduce_normalize(op, args):
    _check_reduce("scatter_reduce", args["reduce"])
    _refuse_complex_extrema(op, args, "input")
    if not _is_tensor(args["src"]):
        raise DtypeError(f"scatter_reduce: src must be a tensor, got {describe(args['src'])}")
    _along_dim_normalize(op, args)


_IDENTITY = {"sum": 0, "mean": 0, "prod": 1}


def _np_identity(reduce: str, dtype):
    """The value a target starts from when include_self=False leaves its old value out."""
    if reduce in _IDENTITY:
        return _IDENTITY[reduce]
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    return np.iinfo(dtype).min if reduce == "amax" else np.iinfo(dtype).max


def _np_reduce_into(out: np.ndarray, key, values: np.ndarray, reduce: str, include_self: bool) -> np.ndarray:
    """The reference: NumPy's unbuffered ufunc.at over the flattened key, then the mean's division."""
    values = values.astype(out.dtype)
    touched = np.zeros(out.shape, bool)
    touched[key] = True
    if not include_self:
        out[touched] = _np_identity(reduce, out.dtype)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.fmax, "amin": np.fmin}[reduce]
    if reduce in ("amax", "amin"):  # NaN wins, as in PyTorch: fmax/fmin skip it, so mark it afterwards
        if out.dtype.kind != "f":
            ufunc.at(out, key, values)
            return out
        nan_hit = np.isnan(out) & touched
        np.logical_or.at(nan_hit, key, np.isnan(values))
        ufunc.at(out, key, values)
        out[nan_hit] = np.nan
        return out
    ufunc.at(out, key, values)
    if reduce == "mean":
        count = np.full(out.shape, 1 if include_self else 0, np.int64)
        np.add.at(count, key, 1)
        count = np.maximum(count, 1)
        out = out / count if out.dtype.kind in "fc" else np.floor_divide(out, count)
    return out.astype(values.dtype)


def _scatter_reduce_reference(x, dim, index, src, reduce, include_self=True):
    out = np.array(np.atleast_1d(x))
    index = np.atleast_1d(index)
    key = list(np.indices(index.shape, sparse=True))
    key[dim % out.ndim] = index
    src = np.atleast_1d(src)[tuple(slice(0, s) for s in index.shape)]
    return _np_reduce_into(out, tuple(key), src, reduce, include_self).reshape(np.shape(x))


def _scatter_reduce_samples(make, dtype):
    def idx(shape_, size):
        return make(shape_, dtype=int64, low=0, high=size)
    yield Sample((make((3, 5)), 0, idx((6, 4), 3), make((6, 5)), "prod"), note="repeats, src larger than index")
    yield Sample((make((4, 3), noncontiguous=True), 1, idx((4, 5), 3), make((4, 5)), "amax"),
                 {"include_self": False})
    yield Sample((make((6,)), 0, idx((9,), 6), make((9,)), "amin"))
    yield Sample((make((2, 4)), -1, idx((2, 7), 4), make((2, 7)), "mean"), {"include_self": False})
    yield Sample((make((5,)), 0, idx((8,), 5), make((8,)), "sum"), {"include_self": False})
    yield Sample((make(()), 0, make((), dtype=int64, low=0, high=1), make(()), "amax"), note="0-d")


defop("scatter_reduce(Tensor input, dim dim, Index index, Tensor src, str reduce, *, bool include_self=True)",
      "indexing", kind="composite", promotion=_in_input_dtype, dtypes="numeric+complex",
      meta=lambda x, dim, index, src, reduce, include_self=True: _scatter_meta("scatter_reduce")(x, dim, index, src),
      normalize=_scatter_reduce_normalize, composite=_scatter_reduce, reference=_scatter_reduce_reference,
      samples=_scatter_reduce_samples, inplace=True, tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="a copy of input with src[i][j] reduced (sum, prod, mean, amax, amin) into out[index[i][j]][j] for "
          "dim 0; include_self=False leaves the old values out where something lands")


def _index_reduce_normalize(op, args):
    _check_reduce("index_reduce", args["reduce"], REDUCTIONS[1:])
    _refuse_complex_extrema(op, args, "input")
    _index_vector_normalize(op, args)


def _index_reduce(x, dim, index, source, reduce, include_self=True):
    if x.ndim == 0:
        return _scatter_reduce(x, 0, index, source, reduce, include_self)
    spread = (1,) * dim + (-1,) + (1,) * (x.ndim - dim - 1)
    index = F.expand(F.reshape(index, spread), tuple(source.shape))
    return _scatter_reduce(x, dim, index, source, reduce, include_self)


def _index_reduce_reference(x, dim, index, source, reduce, include_self=True):
    out = np.array(np.atleast_1d(x))
    return _np_reduce_into(out, _np_along(out, dim, index), np.atleast_1d(source), reduce,
                           include_self).reshape(np.shape(x))


def _index_reduce_samples(make, dtype):
    def idx(n, size):
        return make((n,), dtype=int64, low=0, high=size)
    yield Sample((make((5,)), 0, idx(8, 5), make((8,)), "prod"), note="repeated positions")
    yield Sample((make((4, 5), noncontiguous=True), 1, idx(6, 5), make((4, 6)), "amax"), {"include_self": False})
    yield Sample((make((3, 2)), 0, idx(4, 3), make((4, 2)), "amin"))
    yield Sample((make((3, 2)), 0, idx(5, 3), make((5, 2)), "mean"), {"include_self": False})


defop("index_reduce(Tensor input, dim dim, Index index, Tensor source, str reduce, *, bool include_self=True)",
      "indexing", kind="composite", promotion=_in_input_dtype, dtypes="numeric+complex",
      meta=lambda x, dim, index, source, reduce, include_self=True: shape(x), normalize=_index_reduce_normalize,
      composite=_index_reduce, reference=_index_reduce_reference, samples=_index_reduce_samples, inplace=True,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="a copy of input with source[..., i, ...] reduced (prod, mean, amax, amin) into input[..., index[i], ...] "
          "along dim; include_self=False leaves the old values out where something lands")


# -- diagonal_scatter, select_scatter, slice_scatter: a copy with one view of it overwritten by src -------

def _require_view_shape(op_name: str, view_shape: tuple, x, src) -> None:
    if shape(src) != view_shape:
        raise ShapeError(f"{op_name}: src must have the shape of the view it fills, {view_shape}, got "
                         f"{shape(src)} (input {describe(x)})")
    if src._dtype is not x._dtype:
        raise DtypeError(f"{op_name}: src must have input's dtype {x._dtype.name}, got {describe(src)}")


def _diagonal_span(in_shape: tuple, offset: int, dim1: int, dim2: int) -> tuple:
    """The diagonal's first row and column along dim1 and dim2, and its length."""
    row, column = max(-offset, 0), max(offset, 0)
    return row, column, max(0, min(in_shape[dim1] - row, in_shape[dim2] - column))


def _diagonal_shape(in_shape: tuple, offset: int, dim1: int, dim2: int) -> tuple:
    length = _diagonal_span(in_shape, offset, dim1, dim2)[2]
    return tuple(s for d, s in enumerate(in_shape) if d not in (dim1, dim2)) + (length,)


def _diagonal_scatter_normalize(op, args):
    x, src, dim1, dim2 = args["input"], args["src"], args["dim1"], args["dim2"]
    if len(shape(x)) < 2:
        raise ShapeError(f"diagonal_scatter: input must have at least 2 dimensions, got {describe(x)}")
    if dim1 == dim2:
        raise ArgumentError(f"diagonal_scatter: diagonal dimensions cannot be identical {dim1}, {dim2}")
    _require_view_shape("diagonal_scatter", _diagonal_shape(shape(x), args["offset"], dim1, dim2), x, src)


def _diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    row, column, length = _diagonal_span(tuple(x.shape), offset, dim1, dim2)
    rest = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    order = rest + [dim1, dim2]
    steps = F.arange(length, device=x.device)
    diagonal = [None] * len(rest) + [F.add(steps, row), F.add(steps, column)]
    written = F.index_put_(F.clone(F.permute(x, order)), diagonal, src)
    return F.permute(written, tuple(order.index(d) for d in range(x.ndim)))


def _diagonal_scatter_reference(x, src, offset=0, dim1=0, dim2=1):
    out = np.array(x)
    view = np.moveaxis(out, (dim1, dim2), (-2, -1))  # a view of out
    row, column, length = _diagonal_span(np.shape(x), offset, dim1 % out.ndim, dim2 % out.ndim)
    view[..., np.arange(length) + row, np.arange(length) + column] = src
    return out


def _diagonal_scatter_samples(make, dtype):
    yield Sample((make((3, 4)), make((3,))))
    yield Sample((make((3, 4), noncontiguous=True), make((2,)), 2), note="above the diagonal")
    yield Sample((make((2, 3, 4)), make((2, 2)), -1, 2, 1), note="batched, dims reversed, below the diagonal")
    yield Sample((make((2, 2)), make((0,)), 5), note="an empty diagonal")


defop("diagonal_scatter(Tensor input, Tensor src, int offset=0, dim dim1=0, dim dim2=1)", "indexing",
      dtypes="all+complex", kind="composite", promotion=_in_input_dtype, normalize=_diagonal_scatter_normalize,
      meta=lambda x, src, offset=0, dim1=0, dim2=1: shape(x), composite=_diagonal_scatter,
      reference=_diagonal_scatter_reference, samples=_diagonal_scatter_samples,
      doc="a copy of input with src written on its diagonal (offset, between dim1 and dim2)")


def _select_scatter_normalize(op, args):
    x, src, dim = args["input"], args["src"], args["dim"]
    require_dims("select_scatter", x)
    args["index"] = check_index("select_scatter", x, dim, args["index"])
    _require_view_shape("select_scatter", shape(x)[:dim] + shape(x)[dim + 1:], x, src)


def _select_scatter_reference(x, src, dim, index):
    out = np.array(x)
    out[(slice(None),) * (dim % out.ndim) + (index,)] = src
    return out


def _select_scatter_samples(make, dtype):
    yield Sample((make((3, 4)), make((4,)), 0, 1))
    yield Sample((make((3, 4), noncontiguous=True), make((3,)), -1, -1), note="negative dim and index")
    yield Sample((make((2,)), make(()), 0, 1), note="a 0-d src")


defop("select_scatter(Tensor input, Tensor src, dim dim, int index)", "indexing", kind="composite",
      dtypes="all+complex", promotion=_in_input_dtype, normalize=_select_scatter_normalize,
      meta=lambda x, src, dim, index: shape(x),
      composite=lambda x, src, dim, index: F.index_put_(
          F.clone(x), _along(x, dim, F.full((), index, dtype=int64, device=x.device)), src),
      reference=_select_scatter_reference, samples=_select_scatter_samples,
      doc="a copy of input with src written at input.select(dim, index)")


def _slice_bounds(length: int, start, end, step: int) -> range:
    """The positions input[start:end:step] takes along a dim (Python's clipping of start and end)."""
    return range(*slice(start, end, step).indices(length))


def _slice_scatter_normalize(op, args):
    x, src, dim, step = args["input"], args["src"], args["dim"], args["step"]
    require_dims("slice_scatter", x)
    if step <= 0:
        raise ArgumentError(f"slice_scatter: step must be positive, got {step}")
    positions = _slice_bounds(shape(x)[dim], args["start"], args["end"], step)
    _require_view_shape("slice_scatter", shape(x)[:dim] + (len(positions),) + shape(x)[dim + 1:], x, src)


def _slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    positions = _slice_bounds(x.shape[dim], start, end, step)
    where_to = F.arange(positions.start, max(positions.start, positions.stop), step, dtype=int64, device=x.device)
    return F.index_put_(F.clone(x), _along(x, dim, where_to), src)


def _slice_scatter_reference(x, src, dim=0, start=None, end=None, step=1):
    out = np.array(x)
    out[(slice(None),) * (dim % out.ndim) + (slice(start, end, step),)] = src
    return out


def _slice_scatter_samples(make, dtype):
    yield Sample((make((5, 3)), make((2, 3)), 0, 1, 3))
    yield Sample((make((3, 6), noncontiguous=True), make((3, 2)), 1, None, None, 3), note="step 3")
    yield Sample((make((4,)), make((2,)), 0, -2), note="negative start")
    yield Sample((make((3, 2)), make((0, 2)), 0, 5, 9), note="past the end: an empty slice")


defop("slice_scatter(Tensor input, Tensor src, dim dim=0, int? start=None, int? end=None, int step=1)", "indexing",
      dtypes="all+complex", kind="composite", promotion=_in_input_dtype, normalize=_slice_scatter_normalize,
      meta=lambda x, src, dim=0, start=None, end=None, step=1: shape(x), composite=_slice_scatter,
      reference=_slice_scatter_reference, samples=_slice_scatter_samples,
      doc="a copy of input with src written at input[..., start:end:step, ...] along dim")


# -- fill ---------------------------------------------------------------------------------------------------

def _fill_normalize(op, args):
    x, value = args["input"], args["value"]
    if _is_tensor(value) and shape(value):
        raise ShapeError(f"fill: fill_ only supports 0-dimension value tensor but got tensor with "
                         f"{len(shape(value))} dimensions ({describe(value)})")
    if not _is_tensor(value):
        check_fits("fill", value, x._dtype)


def _fill_samples(make, dtype):
    yield Sample((make((2, 3)), make(())), note="a 0-d tensor value")
    yield Sample((make((3, 4), noncontiguous=True), 1), note="a number")
    yield Sample((make((0, 2)), make(())), note="empty")
    yield Sample((make(()), make(())), note="0-d")


defop("fill(Tensor input, Tensor value)", "indexing", dtypes="all+complex", kind="composite", promotion=_in_input_dtype,
      number_operands=("value",),
      normalize=_fill_normalize, meta=lambda x, value: shape(x), method=False,
      composite=lambda x, value: F.clone(F.expand(F.to_dtype(value, x.dtype) if _is_tensor(value) else
                                                  F.full((), value, dtype=x.dtype, device=x.device), tuple(x.shape))),
      reference=lambda x, value: np.full(np.shape(x), np.asarray(value).astype(x.dtype)), samples=_fill_samples,
      doc="a tensor of input's shape and dtype holding value (a number or 0-d tensor) everywhere")
