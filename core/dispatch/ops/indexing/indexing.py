"""Indexing, gathering and scattering (sorting is in ``sorting``, flips and rolls in ``reorderings``).

Primitives: argwhere, index, index_put_, gather, scatter and scatter_add; everything else
here is composed from them and from views. Index tensors are validated in ``normalize`` with Ember
ops (dtype, bounds) and negative indices are wrapped there, so that kernels on every backend only
ever see in-range, non-negative indices and need no checks of their own.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...execution.dispatcher import note_value_read
from ...schema.dtypes import bool_, int32, int64
from ...schema.errors import ArgumentError, DtypeError, OutOfRangeError, ShapeError, describe, describe_all
from ...schema.meta import broadcast_shapes, numel, require, shape
from ...schema.overflow import check_fits
from ...schema import Sample, defop
from ..namespace import F
from . import transforms
from ..onnx_support import as_ordered, index_as_int64, rank, where
from .._shared import _in_input_dtype, _is_tensor, _with_size
from ._shared import (_advanced_shape, _along_dim_normalize, _check_gather_shapes, _check_index_dtype,
                      _check_mask_dtype, _check_range, _index_put_meta, _index_put_reference, _index_put_samples,
                      _normalize_indices, _np_key, _scatter_meta, _size, sort_keys)
from .value_checks import check_extremes, extremes_now


# -- argwhere, nonzero, unbind -----------------------------------------------------------------

def _argwhere_samples(make, dtype):
    yield Sample((make((3, 4)),))
    yield Sample((make((2, 0, 3)),), note="empty")
    yield Sample((make(()),), note="0-d")
    yield Sample((make((5,), noncontiguous=True),))


def _argwhere_onnx(g, input):
    """NonZero gives one row per dim; argwhere wants one row per element. A 0-d input has no dims: n x 0."""
    if not rank(g, input):
        found = g.op("Transpose", g.op("NonZero", g.op("Reshape", input, g.ints([1]))), perm=[1, 0])
        return g.op("Slice", found, g.ints([0]), g.ints([0]), g.ints([1]))
    return g.op("Transpose", g.op("NonZero", input), perm=[1, 0])


defop("argwhere(Tensor input)", "indexing", promotion=rules.to_int64, meta=lambda x: (None, len(shape(x))),
      dtypes="all+complex", onnx=_argwhere_onnx,
      reference=np.argwhere, samples=_argwhere_samples, differentiable=False,
      doc="(n, ndim) int64 coordinates of the nonzero elements in row-major order; n depends on the data")


def _nonzero(x, as_tuple=False):
    if not as_tuple:
        return F.argwhere(x)
    if x.ndim == 0:  # PyTorch treats a 0-d input as one element here
        return (F.reshape(F.argwhere(F.reshape(x, (1,))), (-1,)),)
    return F.unbind(F.argwhere(x), 1)


def _nonzero_meta(x, as_tuple=False):
    if as_tuple:
        return ((None,),) * max(len(shape(x)), 1)
    return None, len(shape(x))


def _nonzero_reference(x, as_tuple=False):
    return tuple(np.nonzero(np.reshape(x, -1) if x.ndim == 0 else x)) if as_tuple else np.argwhere(x)


# The samples leave as_tuple out: it makes this one-output op return a tuple (tests/ cover it).
defop("nonzero(Tensor input, *, bool as_tuple=False)", "indexing", kind="composite", promotion=rules.to_int64,
      meta=_nonzero_meta, composite=_nonzero, reference=_nonzero_reference, samples=_argwhere_samples,
      dtypes="all+complex", differentiable=False, doc="argwhere(input), or with as_tuple one 1-D index tensor per dim")


def _nonzero_static_normalize(op, args):
    if args["size"] < 0:
        raise ShapeError(f"{op.name}: 'size' must be a non-negative integer, got {args['size']}")


def _nonzero_static(x, size, fill_value=-1):
    found = F.argwhere(x)
    if found.shape[0] >= size:
        return F.slice(found, 0, 0, size)
    padding = F.full((size - found.shape[0], x.ndim), fill_value, dtype=int64, device=x.device)
    return F.cat([found, padding], 0)


def _nonzero_static_reference(x, size, fill_value=-1):
    found = np.argwhere(x)[:size]
    padding = np.full((size - len(found), np.ndim(x)), fill_value, dtype=np.int64)
    return np.concatenate([found.astype(np.int64), padding])


def _nonzero_static_samples(make, dtype):
    yield Sample((make((3, 4), low=0, high=2),), {"size": 5}, note="truncated or padded")
    yield Sample((make((6,), low=0, high=2, noncontiguous=True),), {"size": 8, "fill_value": 7},
                 note="padded with 7")
    yield Sample((make((2, 3)),), {"size": 0}, note="size 0")
    yield Sample((make((2, 0, 3)),), {"size": 2}, note="empty input: all padding")
    yield Sample((make(()),), {"size": 2}, note="0-d: rows of no coordinates")


defop("nonzero_static(Tensor input, *, int size, int fill_value=-1)", "indexing", kind="composite",
      dtypes="all+complex", promotion=rules.to_int64, normalize=_nonzero_static_normalize,
      meta=lambda x, size, fill_value=-1: (size, len(shape(x))), composite=_nonzero_static,
      reference=_nonzero_static_reference, samples=_nonzero_static_samples, differentiable=False,
      doc="nonzero(input) with exactly size rows: the first size, or all of them padded with rows of "
          "fill_value")


def _unbind_normalize(op, args):
    """A 0-d tensor has no dim to unbind; the message names the op called (unbind or unbind_copy)."""
    x = args["input"]
    if not shape(x):
        raise OutOfRangeError(f"{op.name}: cannot unbind a 0-d tensor ({describe(x)})")


def _unbind_meta(x, dim=0):
    in_shape = shape(x)
    return (in_shape[:dim] + in_shape[dim + 1:],) * in_shape[dim]


def _unbind_samples(make, dtype):
    yield Sample((make((3, 4)),))
    yield Sample((make((3, 4)), -1), note="negative dim")
    yield Sample((make((2, 3, 4), noncontiguous=True), 1))
    yield Sample((make((2, 0)), 1), note="no slices")


defop("unbind(Tensor input, dim dim=0)", "indexing", kind="composite", promotion=rules.passthrough,
      normalize=_unbind_normalize, meta=_unbind_meta, composite=lambda x, dim=0: tuple(F.select(x, dim, i) for i in range(x.shape[dim])),
      reference=lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)), samples=_unbind_samples, outputs=("*",),
      doc="the slices along dim, as views")


# -- advanced indexing: index and index_put_ --------------------------------------------------

def _index_reference(x, indices):
    return np.array(x[_np_key(indices)])


def _index_samples(make, dtype):
    def idx(shape_, size, negative=True):
        return make(shape_, dtype=int64, low=-size if negative else 0, high=size)
    yield Sample((make((5,)), [idx((3,), 5)]), note="negative indices")
    yield Sample((make((4, 5, 6)), [None, idx((2, 3), 5)]), note="one index tensor in the middle")
    yield Sample((make((4, 5, 6), noncontiguous=True), [idx((2, 1), 4), idx((3,), 5)]),
                 note="adjacent index tensors broadcast in place")
    yield Sample((make((4, 5, 6)), [idx((2, 1), 4), None, idx((3,), 6)]),
                 note="separated index tensors: broadcast dims go first")
    yield Sample((make((3, 4)), [idx((), 3)]), note="0-d index")
    yield Sample((make((3, 0)), [idx((2,), 3)]), note="empty input")
    yield Sample((make((3,)), [idx((0,), 3, negative=False)]), note="empty index")
    yield Sample((make(()), []), note="0-d input, no index")


def _scattered_back(grad, input, indices):
    """The gradient of input[indices]: grad added back at the indexed positions (duplicates add up). Rows
    picked by one integer index tensor (a table looked up as ``C[X]``) are an embedding's lookup: they take
    its backward, which a backend runs as one pass (real gradients: an embedding's weights are real)."""
    if len(indices) == 1 and indices[0] is not None and input.ndim and not grad.dtype.is_complex:
        index, table = indices[0], tuple(input.shape)
        width = 1
        for size in table[1:]:
            width *= size
        rows = F.reshape(grad, tuple(index.shape) + (width,))
        return F.reshape(F.embedding_dense_backward(rows, index, table[0], -1, False), table)
    zeros = F.zeros(tuple(input.shape), dtype=grad.dtype, device=grad.device)
    return F.index_put(zeros, indices, grad, True)  # out of place: under vmap (jacrev) the gradient is a batch


def _index_put_self_derivative(grad, indices, accumulate):
    if accumulate:
        return grad
    return F.index_put_(F.clone(grad), indices, F.zeros((), dtype=grad.dtype, device=grad.device))


def _index_onnx(g, input, indices):
    """One index tensor: Gather along its dim. Several: GatherND over the indexed dims moved to the front,
    with the index tensors broadcast and stacked; adjacent ones put the broadcast dims back in their place,
    as NumPy does."""
    dims = [d for d, index in enumerate(indices) if index is not None]
    if not dims:
        return g.op("Identity", input)
    if len(dims) == 1:
        return g.op("Gather", input, index_as_int64(g, indices[dims[0]]), axis=dims[0])
    ndim = rank(g, input)
    columns = [index_as_int64(g, indices[d]) for d in dims]
    zero = g.const(0, int64)
    common = None  # zeros of the broadcast shape, so that every index tensor is expanded to it
    for column in columns:
        zeros = g.op("Mul", column, zero)
        common = zeros if common is None else g.op("Add", common, zeros)
    stacked = g.op("Concat", *(g.unsqueeze(g.op("Add", c, common), [-1]) for c in columns), axis=-1)
    rest = [d for d in range(ndim) if d not in dims]
    front = g.op("Transpose", input, perm=dims + rest) if dims + rest != list(range(ndim)) else input
    out = g.op("GatherND", front, stacked)
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    if not adjacent or dims[0] == 0:
        return out
    batch = max(rank(g, indices[d]) for d in dims)
    order = list(range(batch, batch + dims[0])) + list(range(batch)) + list(range(batch + dims[0], batch + len(rest)))
    return g.op("Transpose", out, perm=order)


defop("index(Tensor input, Index?[] indices)", "indexing", promotion=rules.passthrough, onnx=_index_onnx,
      derivative={"input": _scattered_back},
      meta=lambda x, indices: _advanced_shape("index", shape(x), indices), normalize=_normalize_indices,
      reference=_index_reference, samples=_index_samples, method=False, jvp="linear", batch=transforms.index,
      doc="NumPy advanced indexing input[indices] with integer tensors (None = the whole dim); a copy")


defop("index_put_(Tensor self, Index?[] indices, Tensor values, bool accumulate=False)", "indexing",
      dtypes="all+complex", torch_keywords={"input": "self"},
      promotion=_in_input_dtype, meta=_index_put_meta, normalize=_normalize_indices, mutates=True,
      derivative={"self": _index_put_self_derivative, "values": lambda grad, indices: F.index(grad, indices)},
      reference=_index_put_reference, samples=_index_put_samples,
      doc="self[indices] = values (broadcast, cast to self's dtype), in place; accumulate adds, "
          "duplicates included")


# -- gather, scatter, scatter_add -------------------------------------------------------------

def _gather_meta(x, dim, index):
    _check_gather_shapes("gather", x, dim, index)
    return shape(index)


def _gather_samples(make, dtype):
    def idx(shape_, size):
        return make(shape_, dtype=int64, low=0, high=size)
    yield Sample((make((4, 5)), 0, idx((6, 3), 4)), note="index longer than input along dim")
    yield Sample((make((4, 5), noncontiguous=True), 1, idx((2, 7), 5)))
    yield Sample((make((3, 4, 5)), -1, idx((3, 4, 2), 5)))
    yield Sample((make((3,)), 0, idx((0,), 3)), note="empty index")
    yield Sample((make((5,)), 0, idx((), 5)), note="0-d index into 1-D input")
    yield Sample((make(()), 0, idx((), 1)), note="0-d")


def _gather_reference(x, dim, index):
    x, idx = np.atleast_1d(x), np.atleast_1d(index)
    dim %= idx.ndim
    window = tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))
    return np.take_along_axis(x[window], idx, axis=dim).reshape(np.shape(index))


def _gathered_back(grad, input, dim, index):
    zeros = F.zeros(tuple(input.shape), dtype=grad.dtype, device=grad.device)
    return F.scatter_add(zeros, dim, index, grad)


def _src_derivative(grad, dim, index, src):
    """gather(grad) at the scattered positions, followed by zeros where src is larger than index (joined on with
    cat, which every dtype has, complex included)."""
    picked = F.gather(grad, dim, index)
    for d, total in enumerate(tuple(src.shape)):
        missing = total - picked.shape[d]
        if missing:
            shape_ = tuple(picked.shape[:d]) + (missing,) + tuple(picked.shape[d + 1:])
            picked = F.cat([picked, F.zeros(shape_, dtype=picked.dtype, device=picked.device)], d)
    return picked


def _as_1d(g, name, scalar: bool):
    """A 0-d operand as shape (1,), which gather and scatter treat it as (PyTorch's rule)."""
    return g.op("Reshape", name, g.ints([1])) if scalar else name


def _gather_onnx(g, input, dim, index):
    scalar_index = not rank(g, index)
    out = g.op("GatherElements", _as_1d(g, input, not rank(g, input)),
               _as_1d(g, index_as_int64(g, index), scalar_index), axis=dim)
    return g.op("Reshape", out, g.ints([])) if scalar_index else out


def _fitted_src(g, src, index):
    """scatter's src cut (or a number expanded) to index's shape: ONNX updates match the indices."""
    wanted = g.op("Shape", index)
    if not rank(g, src):
        return g.op("Expand", src, wanted)
    axes = list(range(rank(g, src)))
    return g.op("Slice", src, g.ints([0] * len(axes)), wanted, g.ints(axes))


def _scatter_onnx(reduction):
    def lower(g, input, dim, index, src):
        scalar = not rank(g, input)  # then index and src are 0-d too
        updates = _fitted_src(g, src, index)
        index, input, updates = (_as_1d(g, x, scalar) for x in (index_as_int64(g, index), input, updates))
        out = g.op("ScatterElements", input, index, updates, axis=dim, reduction=reduction)
        return g.op("Reshape", out, g.ints([])) if scalar else out
    return lower


defop("gather(Tensor input, dim dim, Index index)", "indexing", promotion=rules.passthrough, onnx=_gather_onnx,
      derivative={"input": _gathered_back},
      meta=_gather_meta, normalize=_along_dim_normalize, reference=_gather_reference,
      samples=_gather_samples, jvp="linear", batch=transforms.along_dim,
      doc="out[i][j] = input[index[i][j]][j] for dim 0 (likewise for other dims); out has index's shape")


def _scatter_reference(accumulate):
    def reference(x, dim, index, src):
        out = np.array(np.atleast_1d(x))
        index = np.atleast_1d(index)
        key = list(np.indices(index.shape, sparse=True))
        key[dim] = index
        src = np.asarray(src, dtype=out.dtype)
        if src.ndim:
            src = np.atleast_1d(src)[tuple(slice(0, s) for s in index.shape)]
        (np.add.at if accumulate else _assign)(out, tuple(key), src)
        return out.reshape(np.shape(x))
    return reference


def _assign(out, key, src):
    out[key] = src


def _distinct_index(make, size, index_shape, dim):
    """An index with no position repeated along dim (where scatter's result would be unspecified)."""
    full = index_shape[:dim] + (size,) + index_shape[dim + 1:]
    return F.slice(F.argsort(sort_keys(make, full), dim), dim, 0, index_shape[dim])


def _scatter_samples(distinct):
    def index(make, size, index_shape, dim):
        if distinct and index_shape:
            return _distinct_index(make, size, index_shape, dim)
        return make(index_shape, dtype=int64, low=0, high=size)

    def samples(make, dtype):
        yield Sample((make((4, 5)), 0, index(make, 4, (3, 5), 0), make((4, 6))), note="src larger than index")
        yield Sample((make((4, 5), noncontiguous=True), 1, index(make, 5, (2, 3), 1),
                      make((2, 3), noncontiguous=True)))
        yield Sample((make((3, 4, 5)), -1, index(make, 5, (3, 4, 2), 2), make((3, 4, 2))))
        yield Sample((make((3,)), 0, make((0,), dtype=int64, low=0, high=3), make((0,))), note="empty index")
        yield Sample((make(()), 0, make((), dtype=int64, low=0, high=1), make(())), note="0-d")
        if distinct:  # scatter's Scalar overload; scatter_add has none
            yield Sample((make((4, 5)), 1, index(make, 5, (4, 2), 1), 3), note="a number as src")
        else:
            yield Sample((make((2, 3)), 0, make((5, 3), dtype=int64, low=0, high=2), make((5, 3))),
                         note="repeated positions accumulate")
    return samples


def _declare_scatter(name, accumulate, doc, autocast=None):
    defop(f"{name}(Tensor input, dim dim, Index index, Tensor src)", "indexing", promotion=_in_input_dtype,
          dtypes="all+complex", onnx=_scatter_onnx("add" if accumulate else "none"),
          meta=_scatter_meta(name), normalize=_along_dim_normalize,
          derivative={"input": (lambda grad: grad) if accumulate else
                      (lambda grad, dim, index: F.scatter(grad, dim, index, 0)), "src": _src_derivative},
          reference=_scatter_reference(accumulate), samples=_scatter_samples(distinct=not accumulate),
          inplace=True, doc=doc, autocast=autocast, batch=transforms.along_dim,
          torch_keywords={} if accumulate else {"value": "src"}, number_operands=() if accumulate else ("src",))


_declare_scatter("scatter", False, "a copy of input with out[index[i][j]][j] = src[i][j] for dim 0; src may be "
                                   "a number; duplicate positions keep one of the values")
_declare_scatter("scatter_add", True, "a copy of input with src[i][j] added at out[index[i][j]][j] for dim 0; "
                                      "duplicate positions accumulate", autocast={"cuda": "promote"})


# -- index_add: scatter_add by one index vector, composed of index_put_ ------------------------

def check_index_vector(op_name: str, x, dim: int, index, source=None):
    """PyTorch's rules for index_add and its kin (index_copy, index_fill, index_reduce): an integer index of
    at most one dim, in range (no negatives); a source (where the op takes one) of input's dtype, shaped like
    input off dim, with one slice per index. Returns the index the kernel may use (``_check_range``)."""
    _check_index_dtype(op_name, index)
    if len(shape(index)) > 1:
        raise OutOfRangeError(f"{op_name}: index must be a vector (0-d or 1-D), got {describe(index)}")
    in_shape = shape(x)
    if source is not None:
        if not _is_tensor(source) or source._dtype is not x._dtype:
            raise DtypeError(f"{op_name}: source must be a tensor of input's dtype {x._dtype.name}, "
                             f"got {describe(source)}")
        source_shape = shape(source)  # mismatches are IndexErrors (and RuntimeErrors), as PyTorch's
        if len(source_shape) != len(in_shape) or any(
                a != b for d, (a, b) in enumerate(zip(source_shape, in_shape)) if d != dim):
            raise OutOfRangeError(f"{op_name}: source must have input's shape except along dim {dim} "
                                  f"({describe_all((x, source))})")
        if numel(shape(index)) != _size(source_shape, dim):
            raise OutOfRangeError(f"{op_name}: the number of indices ({numel(shape(index))}) must equal source's "
                                  f"size along dim {dim} ({_size(source_shape, dim)}); "
                                  f"{describe_all((index, source))}")
    return _check_range(op_name, index, dim, _size(in_shape, dim), negative_ok=False)


def _index_add_normalize(op, args):
    args["index"] = check_index_vector("index_add", args["input"], args["dim"], args["index"], args["source"])


def _index_add(x, dim, index, source, alpha=1):
    if x.ndim == 0:
        flat = _index_add(F.reshape(x, (1,)), 0, index, F.reshape(source, (1,)), alpha)
        return F.reshape(flat, ())
    if alpha != 1:
        # integer tensors take alpha in their own dtype (2.5 counts as 2), as in PyTorch
        source = F.mul(source, alpha if x.dtype.is_inexact else int(alpha))
    return F.index_put_(F.clone(x), [None] * dim + [F.reshape(index, (-1,))], source, True)


def _index_add_reference(x, dim, index, source, alpha=1):
    out = np.array(np.atleast_1d(x))
    source = np.atleast_1d(source)
    if alpha != 1:
        source = source * (alpha if out.dtype.kind == "f" else int(alpha))
    np.add.at(out, (slice(None),) * (dim % out.ndim) + (np.reshape(index, -1),), source.astype(out.dtype))
    return out.reshape(np.shape(x))


def _index_add_samples(make, dtype):
    def idx(n, size):
        return make((n,), dtype=int64, low=0, high=size)
    alpha = 0.5 if dtype.is_floating_point else 3
    yield Sample((make((5,)), 0, idx(8, 5), make((8,))), note="repeated positions accumulate")
    yield Sample((make((4, 5), noncontiguous=True), 1, idx(3, 5), make((4, 3))), {"alpha": alpha},
                 note=f"alpha={alpha}")
    yield Sample((make((2, 3, 4)), -1, idx(6, 4), make((2, 3, 6))), note="negative dim")
    yield Sample((make((3, 2)), 0, idx(0, 3), make((0, 2))), note="empty index")
    yield Sample((make(()), 0, make((), dtype=int64, low=0, high=1), make(())), note="0-d")


def _index_add_onnx(g, input, dim, index, source, alpha=1):
    """ScatterND with reduction add (repeated indices accumulate) over dim moved to the front. Bools add
    as int32: a sum above zero is true."""
    dtype, scalar = g.compute, not rank(g, input)
    x, source = (as_ordered(g, _as_1d(g, t, scalar), dtype) for t in (input, source))
    if alpha != 1:
        scale = alpha if dtype.is_inexact else int(alpha)
        source = g.op("Mul", source, g.const(scale, int32 if dtype is bool_ else dtype))
    order = [dim] + [d for d in range(max(rank(g, input), 1)) if d != dim]
    inverse = [order.index(d) for d in range(len(order))]
    positions = g.unsqueeze(g.op("Reshape", index_as_int64(g, index), g.ints([-1])), [1])
    added = g.op("ScatterND", g.op("Transpose", x, perm=order), positions, g.op("Transpose", source, perm=order),
                 reduction="add")
    out = g.op("Transpose", added, perm=inverse)
    out = g.cast(out, dtype) if dtype is bool_ else out
    return g.op("Reshape", out, g.ints([])) if scalar else out


defop("index_add(Tensor input, dim dim, Index index, Tensor source, *, Scalar alpha=1)", "indexing",
      dtypes="all+complex", onnx=_index_add_onnx,
      kind="composite", promotion=_in_input_dtype, meta=lambda x, dim, index, source, alpha=1: shape(x),
      normalize=_index_add_normalize, composite=_index_add, reference=_index_add_reference,
      samples=_index_add_samples, inplace=True,
      doc="a copy of input with alpha * source[..., i, ...] added at input[..., index[i], ...] along dim; "
          "repeated indices accumulate")


# -- index_select, masked_fill, masked_select --------------------------------------------------

def _index_select_normalize(op, args):
    x, dim, index = args["input"], args["dim"], args["index"]
    _check_index_dtype("index_select", index)
    if len(shape(index)) > 1:
        raise ShapeError(f"index_select: index must be 0-d or 1-D, got {describe(index)}")
    if not shape(x):
        require(index.numel() == 1, "index_select", "a 0-d input takes exactly one index", x, index)
    args["index"] = _check_range("index_select", index, dim, _size(shape(x), dim), negative_ok=False)  # no negatives


def _index_select_onnx(g, input, dim, index):
    positions = g.op("Reshape", index_as_int64(g, index), g.ints([-1]))
    scalar = not rank(g, input)
    out = g.op("Gather", _as_1d(g, input, scalar), positions, axis=dim)
    return g.op("Reshape", out, g.ints([])) if scalar else out


def _index_select(x, dim, index):
    if x.ndim == 0:
        return F.reshape(F.index(F.reshape(x, (1,)), [F.reshape(index, (1,))]), ())
    return F.index(x, [None] * dim + [F.reshape(index, (-1,))])


def _index_select_samples(make, dtype):
    yield Sample((make((4, 5)), 1, make((7,), dtype=int64, low=0, high=5)), note="repeats")
    yield Sample((make((4, 5), noncontiguous=True), 0, make((), dtype=int64, low=0, high=4)), note="0-d index")
    yield Sample((make((4, 0)), 0, make((2,), dtype=int64, low=0, high=4)), note="empty input")
    yield Sample((make(()), 0, make((1,), dtype=int64, low=0, high=1)), note="0-d input")


defop("index_select(Tensor input, dim dim, Index index)", "indexing", kind="composite",
      promotion=rules.passthrough,
      meta=lambda x, dim, index: _with_size(shape(x), dim, numel(shape(index))),
      normalize=_index_select_normalize, composite=_index_select, onnx=_index_select_onnx,
      reference=lambda x, dim, index: np.take(x, np.reshape(index, -1), axis=dim) if x.ndim else x.copy(),
      samples=_index_select_samples, doc="the entries of index (a 0-d or 1-D integer tensor) along dim")


def _masked_fill_normalize(op, args):
    _check_mask_dtype("masked_fill", args["mask"])
    value = args["value"]
    if _is_tensor(value) and shape(value):
        raise ShapeError(f"masked_fill: value must be a number or a 0-d tensor, got {describe(value)}")
    if not _is_tensor(value):
        check_fits("masked_fill", value, args["input"]._dtype)


def _masked_fill_onnx(g, input, mask, value):
    return where(g, mask, value, input, g.compute)


def _masked_fill(x, mask, value):
    if _is_tensor(value):
        value = F.to_dtype(value, x.dtype)
    else:
        value = F.full((), value, dtype=x.dtype, device=x.device)
    return F.where(mask, value, x)


def _masked_fill_samples(make, dtype):
    yield Sample((make((3, 4)), make((3, 4), dtype=bool_), 5))
    yield Sample((make((3, 4), noncontiguous=True), make((4,), dtype=bool_), make(())), note="broadcast mask")
    yield Sample((make((3,)), make((2, 3), dtype=bool_), 0), note="the mask broadcasts input")
    yield Sample((make((0, 2)), make((0, 2), dtype=bool_), 1), note="empty")
    yield Sample((make(()), make((), dtype=bool_), 1), note="0-d")


defop("masked_fill(Tensor input, Index mask, Tensor value)", "indexing", dtypes="all+complex", kind="composite",
      number_operands=("value",),
      promotion=_in_input_dtype, meta=lambda x, mask, value: broadcast_shapes("masked_fill", shape(x), shape(mask)),
      normalize=_masked_fill_normalize, composite=_masked_fill, inplace=True, samples=_masked_fill_samples,
      onnx=_masked_fill_onnx,
      reference=lambda x, mask, value: np.where(mask, np.asarray(value).astype(x.dtype), x),
      doc="value (a number or 0-d tensor, cast to input's dtype) where the bool mask is true")


def _masked_select(x, mask):
    size = broadcast_shapes("masked_select", tuple(x.shape), tuple(mask.shape))
    flat = F.reshape(F.expand(x, size), (-1,))
    chosen = F.reshape(F.argwhere(F.reshape(F.expand(mask, size), (-1,))), (-1,))
    return F.index(flat, [chosen])


def _masked_select_samples(make, dtype):
    yield Sample((make((3, 4)), make((3, 4), dtype=bool_)))
    yield Sample((make((3, 4), noncontiguous=True), make((2, 1, 4), dtype=bool_)), note="broadcast")
    yield Sample((make((0, 4)), make((4,), dtype=bool_)), note="empty")
    yield Sample((make(()), make((), dtype=bool_)), note="0-d")


def _masked_select_meta(x, mask):
    broadcast_shapes("masked_select", shape(x), shape(mask))
    return (None,)  # how many elements are selected depends on the data


defop("masked_select(Tensor input, Index mask)", "indexing", kind="composite", promotion=rules.passthrough,
      meta=_masked_select_meta,
      normalize=lambda op, args: _check_mask_dtype("masked_select", args["mask"]), composite=_masked_select,
      reference=lambda x, mask: np.broadcast_to(x, np.broadcast_shapes(x.shape, mask.shape))[
          np.broadcast_to(mask, np.broadcast_shapes(x.shape, mask.shape))],
      samples=_masked_select_samples, doc="a 1-D tensor of the elements where the (broadcast) bool mask is true")


# -- one_hot --------------------------------------------------------------------------------------------------

def _one_hot_normalize(op, args):
    """Resolves num_classes=-1, which reads the data (the result's shape depends on it), as PyTorch does; with
    num_classes given, the class values are checked on the device where the backend defers value checks."""
    note_value_read()
    x, num_classes = args["tensor"], args["num_classes"]
    if num_classes < -1:
        raise ArgumentError(f"one_hot: num_classes must be -1 or non-negative, got {num_classes}")
    if x.numel() == 0:
        if num_classes == -1:
            raise ArgumentError("one_hot: cannot infer the number of classes from an empty tensor; pass num_classes")
        return

    def verdict(low, high):
        if low < 0:
            return ArgumentError(f"one_hot: class values must be non-negative, got {low}")
        if num_classes != -1 and high >= num_classes:
            return ArgumentError(f"one_hot: class values must be smaller than num_classes={num_classes}, got {high}")
        return None
    if num_classes != -1:  # a value out of range matches no class: a row of zeros until the check is judged
        check_extremes(x, verdict)
        return
    low, high = extremes_now(x)
    error = verdict(low, high)
    if error is not None:
        raise error
    args["num_classes"] = high + 1


def _one_hot(x, num_classes=-1):
    return F.to_dtype(F.eq(F.unsqueeze(x, -1), F.arange(num_classes, device=x.device)), int64)


def _one_hot_reference(x, num_classes=-1):
    if num_classes == -1:
        num_classes = int(np.max(x)) + 1
    return (np.asarray(x)[..., None] == np.arange(num_classes)).astype(np.int64)


def _one_hot_samples(make, dtype):
    yield Sample((make((6,), low=0, high=4),))
    yield Sample((make((2, 3), low=0, high=5), 7))
    yield Sample((make((), low=0, high=3), 3), note="0-d")
    yield Sample((make((0,), low=0, high=3), 3), note="empty")


def _one_hot_onnx(g, tensor, num_classes):
    """OneHot with int64 values 0 and 1 (a 0-d index as a vector of one: OneHot needs rank 1)."""
    indices = index_as_int64(g, tensor)
    scalar = not g.shape_of(tensor)
    if scalar:
        indices = g.unsqueeze(indices, [0])
    out = g.op("OneHot", indices, g.const(num_classes, int64), g.const([0, 1], int64), axis=-1)
    return g.squeeze(out, [0]) if scalar else out


defop("one_hot(Index tensor, int num_classes=-1)", "nn", kind="composite",
      promotion=rules.to_int64, dtypes="int",
      meta=lambda x, num_classes=-1: shape(x) + (num_classes,), normalize=_one_hot_normalize,
      composite=_one_hot, reference=_one_hot_reference, samples=_one_hot_samples, method=False,
      differentiable=False, onnx=_one_hot_onnx,
      doc="int64 indicators with a new last dim; num_classes=-1 means max + 1")
