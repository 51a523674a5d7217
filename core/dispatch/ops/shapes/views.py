"""Views (outputs share storage with the input), reshaping, copies, casts, joining and splitting."""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.binding import int_argument
from ...execution.dispatcher import wrap_dim
from ...schema.errors import ArgumentError, OutOfRangeError, ShapeError
from ...schema.meta import check_index, numel, require, require_dims, shape
from ...schema import Sample, defop
from ..namespace import F
from . import transforms
from ..onnx_support import rank, reshape, shape_part, size_of


def infer_size(op_name: str, size: tuple, total: int) -> tuple:
    """Replace one -1 in ``size`` so that the element count is ``total``. One pass: views run in every
    layer's forward and backward."""
    known, unknown = 1, None
    for i, s in enumerate(size):
        if s >= 0:
            known *= s
        elif s == -1 and unknown is None:
            unknown = i
        elif s == -1:
            raise ShapeError(f"{op_name}: only one dimension can be inferred (-1), got size {size}")
        else:
            raise ShapeError(f"{op_name}: invalid size {size}: sizes must be non-negative or -1")
    if unknown is not None:
        if known == 0 or total % known:
            raise ShapeError(f"{op_name}: shape {size} is invalid for input of size {total}")
        size = size[:unknown] + (total // known,) + size[unknown + 1:]
    elif known != total:
        raise ShapeError(f"{op_name}: shape {size} is invalid for input of size {total}")
    return size


def view_strides(old_shape: tuple, old_strides: tuple, new_shape: tuple):
    """Strides that present the same memory in ``new_shape``, or None when a copy would be needed.

    Walks both shapes from the innermost dim, matching runs of old dims that are contiguous
    with one another against runs of new dims of the same element count (PyTorch's rule).
    """
    if numel(old_shape) == 0 or not old_shape:
        strides, acc = [], 1
        for s in reversed(new_shape):
            strides.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(strides))
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base_stride = old_strides[-1]
    old_count = view_count = 1
    for d in range(len(old_shape) - 1, -1, -1):
        old_count *= old_shape[d]
        run_ends = d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != old_count * base_stride)
        if run_ends:
            while view_d >= 0 and (view_count < old_count or new_shape[view_d] == 1):
                new_strides[view_d] = view_count * base_stride
                view_count *= new_shape[view_d]
                view_d -= 1
            if view_count != old_count:
                return None
            if d > 0:
                base_stride = old_strides[d - 1]
                old_count = view_count = 1
    return tuple(new_strides) if view_d == -1 else None


# -- derivatives ------------------------------------------------------------------------------

def _zeros_along(like, dim: int, size: int):
    return F.zeros(tuple(like.shape[:dim]) + (size,) + tuple(like.shape[dim + 1:]), dtype=like.dtype,
                   device=like.device)


def place_slice(grad, in_shape: tuple, dim: int, start: int, step: int):
    """The gradient of ``input[..., start::step, ...]``: grad put back among zeros shaped like the input.

    Written with cat and reshape only, so it is differentiable itself (for double backward)."""
    count = grad.shape[dim]
    if step > 1 and count > 1:
        spread = F.cat([F.unsqueeze(grad, dim + 1), F.unsqueeze(_zeros_along(grad, dim, count), dim + 1)
                        if step == 2 else _zeros_along(F.unsqueeze(grad, dim + 1), dim + 1, step - 1)], dim + 1)
        grad = F.slice(F.flatten(spread, dim, dim + 1), dim, 0, (count - 1) * step + 1)
    after = in_shape[dim] - start - grad.shape[dim]
    parts = ([_zeros_along(grad, dim, start)] if start else []) + [grad] + \
        ([_zeros_along(grad, dim, after)] if after > 0 else [])
    return F.cat(parts, dim) if len(parts) > 1 else grad


def _unfold_derivative(grad, input, dimension, size, step):
    """Overlapping windows add their gradients back into the positions they covered."""
    if input.ndim == 0:  # one window of at most one element
        return F.reshape(F.sum(grad), ())
    in_shape = tuple(input.shape) or (1,)
    total = None
    for k in range(size):
        part = place_slice(F.select(grad, -1, k), in_shape, dimension, k, step)
        total = part if total is None else F.add(total, part)
    if total is None:
        total = F.zeros(in_shape, dtype=grad.dtype, device=grad.device)
    return F.reshape(total, tuple(input.shape))


def _cat_derivative(grad, tensors, dim):
    pieces, start = [], 0
    for t in tensors:
        size = t.shape[dim]
        pieces.append(F.slice(grad, dim, start, start + size))
        start += size
    return [pieces]


def _inverse(dims) -> tuple:
    out = [0] * len(dims)
    for i, d in enumerate(dims):
        out[d] = i
    return tuple(out)


# -- ONNX lowerings (see ember.onnx.builder); sizes go through g.ints so they follow dynamic axes ---------

def _view_onnx(g, input, size):
    return reshape(g, input, g.ints(size))


def _reshape_onnx(g, input, shape):
    """-1 is left for ONNX to infer; a 0 then would mean "keep", so sizes are literal only without -1."""
    return reshape(g, input, g.ints(shape), zero_means_zero=-1 not in list(shape))


def _permute_onnx(g, input, dims):
    return g.op("Transpose", input, perm=list(dims)) if dims else g.op("Identity", input)


def _expand_onnx(g, input, size):
    return g.op("Expand", input, g.ints(size))


def _slice_onnx(g, input, dim, start, end, step):
    """start and end come normalized (clamped to the length); either may follow a dynamic axis."""
    return g.op("Slice", input, g.ints([start]), g.ints([end]), g.ints([g.static(dim, "dim")]), g.ints([step]))


def _unfold_onnx(g, input, dimension, size, step):
    """Gather of the window positions (window i covers i * step ... i * step + size - 1), then the window's
    own axis moved last."""
    in_shape = g.shape_of(input) or (1,)
    ndim, length = len(in_shape), in_shape[dimension]
    if not rank(g, input):  # a 0-d input's one window, of shape (size,) (size is 0 or 1)
        single = g.op("Reshape", input, g.ints([1]))
        return g.op("Slice", single, g.ints([0]), g.ints([g.static(size, "size")]), g.ints([0]))
    size, step = g.static(size, "size"), g.static(step, "step")
    offsets = g.const(np.arange(size, dtype=np.int64).reshape(1, size))
    if isinstance(length, int):
        starts = g.const((np.arange((length - size) // step + 1, dtype=np.int64) * step).reshape(-1, 1))
    else:
        count = g.op("Add", g.op("Div", g.op("Sub", size_of(g, input, dimension), g.ints([size])), g.ints([step])),
                     g.ints([1]))
        count = g.op("Squeeze", count, g.ints([0]))
        starts = g.op("Range", g.const(0, np.int64), g.op("Mul", count, g.const(step, np.int64)),
                      g.const(step, np.int64))
        starts = g.unsqueeze(starts, [1])
    windows = g.op("Gather", input, g.op("Add", starts, offsets), axis=dimension)
    order = list(range(dimension + 1)) + list(range(dimension + 2, ndim + 1)) + [dimension + 1]
    return g.op("Transpose", windows, perm=order)


def _to_dtype_onnx(g, input, dtype):
    return g.cast(input, dtype)


def _cat_onnx(g, tensors, dim):
    return g.op("Concat", *tensors, axis=g.static(dim, "dim"))


def _stack_onnx(g, tensors, dim):
    dim = g.static(dim, "dim") % (rank(g, tensors[0]) + 1)
    return g.op("Concat", *(g.unsqueeze(t, [dim]) for t in tensors), axis=dim)


def _transpose_onnx(g, input, dim0, dim1):
    dims = list(range(rank(g, input)))
    if dims:
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return _permute_onnx(g, input, dims)


def _squeeze_onnx(g, input, dim=None):
    in_shape = g.shape_of(input)
    dims = range(len(in_shape)) if dim is None else dim
    axes = [d for d in dims if in_shape and in_shape[d] == 1]
    return g.squeeze(input, axes) if axes else g.op("Identity", input)


def _unsqueeze_onnx(g, input, dim):
    return g.unsqueeze(input, [wrap_dim("unsqueeze", dim, rank(g, input) + 1)])


def _flatten_onnx(g, input, start_dim=0, end_dim=-1):
    """The flattened dims' product is taken from the shape at run time, so a dynamic axis may be among them."""
    ndim = rank(g, input)
    if not ndim:
        return g.op("Reshape", input, g.ints([1]))
    start, end = wrap_dim("flatten", start_dim, ndim), wrap_dim("flatten", end_dim, ndim)
    if start == end:
        return g.op("Identity", input)
    merged = g.reduce("ReduceProd", shape_part(g, input, start, end + 1), [0], True)
    shape_ = g.op("Concat", shape_part(g, input, 0, start), merged, shape_part(g, input, end + 1), axis=0)
    return reshape(g, input, shape_)


def _unflatten_onnx(g, input, dim, sizes):
    in_shape = g.shape_of(input)
    dim = wrap_dim("unflatten", dim, len(in_shape))
    sizes = list(sizes)
    if -1 in sizes and all(isinstance(s, int) for s in sizes) and isinstance(in_shape[dim], int):
        sizes = list(infer_size("unflatten", tuple(sizes), in_shape[dim]))
    shape_ = g.op("Concat", shape_part(g, input, 0, dim), g.ints(sizes), shape_part(g, input, dim + 1), axis=0)
    return reshape(g, input, shape_, zero_means_zero=-1 not in sizes)


def _select_onnx(g, input, dim, index):
    return g.op("Gather", input, g.scalar(index), axis=g.static(dim, "dim"))


def _split_onnx(g, input, split_size_or_sections, dim=0):
    """ONNX Split by sizes worked out at export: the number of pieces must not follow a dynamic axis."""
    length = g.static(g.shape_of(input)[dim], "the length of the split dim")
    sizes = _split_sizes(length, g.static(split_size_or_sections, "split_size_or_sections"), "split")
    if len(sizes) == 1:
        return (g.op("Identity", input),)
    return g.op("Split", input, g.ints(sizes), axis=dim, outputs=len(sizes))


def _chunk_onnx(g, input, chunks, dim=0):
    length = g.static(g.shape_of(input)[dim], "the length of the chunked dim")
    return _split_onnx(g, input, max(-(-length // chunks), 1), dim)


# -- conformance samples (``make`` and ``Sample`` as documented in schema.py) -------------------

def _view_samples(make, dtype):
    yield Sample((make((2, 3, 4)), (6, 4)))
    yield Sample((make((4, 6)), (-1,)), note="-1 infers the size")
    yield Sample((make((4, 6), noncontiguous=True), (2, 2, 6)), note="splitting a dim of a transposed input")
    yield Sample((make(()), (1, 1)), note="0-d to 2-D")
    yield Sample((make((1,)), ()), note="to 0-d")
    yield Sample((make((0, 3)), (3, 0, 1)), note="empty")


def _permute_samples(make, dtype):
    yield Sample((make((2, 3, 4)), (2, 0, 1)))
    yield Sample((make((2, 3)), (-1, 0)), note="negative dims")
    yield Sample((make((3, 4), noncontiguous=True), (1, 0)), note="non-contiguous")
    yield Sample((make(()), ()), note="0-d")


def _expand_samples(make, dtype):
    yield Sample((make((3, 1)), (3, 4)))
    yield Sample((make((2, 1, 3)), (4, 2, 5, 3)), note="new leading dim")
    yield Sample((make((1, 3)), (-1, 3)), note="-1 keeps a size")
    yield Sample((make(()), (2, 2)), note="0-d")
    yield Sample((make((1, 2), noncontiguous=True), (3, 2)), note="non-contiguous")
    yield Sample((make((1,)), (0,)), note="to empty")


def _slice_samples(make, dtype):
    x = make((5, 4))
    yield Sample((x, 0, 1, 3))
    yield Sample((x, 1, None, None, 2), note="step")
    yield Sample((x, -1, -3, None), note="negative dim and start")
    yield Sample((x, 0, 7, 9), note="past the end: empty")
    yield Sample((make((6, 5), noncontiguous=True), 1, 1, -1, 2), note="non-contiguous")


def _unfold_samples(make, dtype):
    yield Sample((make((6,)), 0, 2, 1))
    yield Sample((make((3, 7)), 1, 3, 2))
    yield Sample((make((4, 5), noncontiguous=True), 0, 2, 2), note="non-contiguous")
    yield Sample((make((2, 3)), 1, 0, 1), note="empty windows")
    yield Sample((make(()), 0, 1, 1), note="0-d: one window of shape (1,)")
    yield Sample((make(()), 0, 0, 2), note="0-d, empty window")


def _clone_samples(make, dtype):
    yield Sample((make((2, 3)),))
    yield Sample((make(()),), note="0-d")
    yield Sample((make((0, 2)),), note="empty")
    yield Sample((make((3, 4), noncontiguous=True),), note="non-contiguous")


def _to_dtype_samples(make, dtype):
    for target in ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        # values in [0, 100) fit every dtype, so float-to-integer conversion is defined
        yield Sample((make((2, 3), low=0, high=100), target), note=f"to {target}")
    yield Sample((make((3, 4), noncontiguous=True, low=0, high=100), "float32"), note="non-contiguous")
    yield Sample((make((), low=0, high=100), "int64"), note="0-d")


def _copy_samples(make, dtype):
    yield Sample((make((2, 3)), make((2, 3))))
    yield Sample((make((2, 3)), make((3,))), note="broadcast source")
    yield Sample((make((3, 4), noncontiguous=True), make((3, 4))), note="non-contiguous destination")
    yield Sample((make((2, 3)), make((2, 3), dtype="float32", low=0, high=100)), note="float32 source, cast")
    yield Sample((make((2, 3)), make((2, 3), dtype="int64", low=0, high=100)), note="int64 source, cast")
    yield Sample((make(()), make(())), note="0-d")


def _cat_samples(make, dtype):
    yield Sample(([make((2, 3)), make((4, 3))],))
    yield Sample(([make((2, 3)), make((2, 1)), make((2, 2), noncontiguous=True)], 1), note="dim 1, three inputs")
    yield Sample(([make((2, 3)), make((0, 3))], -2), note="an empty input")
    yield Sample(([make((3,))],), note="one input")
    yield Sample(([make((2,)), make((3,), dtype="bool")],), note="promotes a bool input")


def _stack_samples(make, dtype):
    yield Sample(([make((2, 3)), make((2, 3))],))
    yield Sample(([make((2, 3)), make((2, 3), noncontiguous=True), make((2, 3))], -1), note="last dim")
    yield Sample(([make(()), make(())],), note="0-d")
    yield Sample(([make((0, 2))],), note="empty")


def _reshape_samples(make, dtype):
    yield Sample((make((2, 3, 4)), (6, -1)), note="a view")
    yield Sample((make((3, 4), noncontiguous=True), (12,)), note="non-contiguous: a copy")
    yield Sample((make(()), ()), note="0-d")
    yield Sample((make((0, 3)), (3, 0, 1)), note="empty")


def _transpose_samples(make, dtype):
    yield Sample((make((2, 3, 4)), 0, 2))
    yield Sample((make((3, 5)), -1, -2), note="negative dims")
    yield Sample((make((3,)), 0, -1), note="1-D")
    yield Sample((make(()), 0, -1), note="0-d")


def _squeeze_samples(make, dtype):
    yield Sample((make((2, 1, 3, 1)),), note="all size-1 dims")
    yield Sample((make((2, 1, 3)), 1))
    yield Sample((make((2, 1, 3, 1)), (1, -1)), note="several dims")
    yield Sample((make((2, 3)), 0), note="not size 1: unchanged")
    yield Sample((make(()),), note="0-d")


def _unsqueeze_samples(make, dtype):
    yield Sample((make((2, 3)), 0))
    yield Sample((make((2, 3)), -1), note="negative dim")
    yield Sample((make((3, 4), noncontiguous=True), 1), note="non-contiguous")
    yield Sample((make(()), 0), note="0-d")


def _flatten_samples(make, dtype):
    yield Sample((make((2, 3, 4)),))
    yield Sample((make((2, 3, 4)), 1), note="from dim 1")
    yield Sample((make((2, 3, 4)), 0, -2), note="leading dims")
    yield Sample((make((3, 4), noncontiguous=True),), note="non-contiguous")
    yield Sample((make(()),), note="0-d")


def _unflatten_samples(make, dtype):
    yield Sample((make((2, 12)), 1, (3, 4)))
    yield Sample((make((6,)), 0, (2, -1)), note="-1 infers a size")
    yield Sample((make((4, 6), noncontiguous=True), 0, (2, 2)), note="non-contiguous")


def _select_samples(make, dtype):
    yield Sample((make((3, 4)), 0, 1))
    yield Sample((make((3, 4)), 1, -1), note="negative index")
    yield Sample((make((3, 4, 2), noncontiguous=True), -1, 0), note="non-contiguous")
    yield Sample((make((2,)), 0, 1), note="to 0-d")


def _split_samples(make, dtype):
    yield Sample((make((5, 4)), 2), note="equal sizes, the last smaller")
    yield Sample((make((5, 4)), [1, 4]), note="sections")
    yield Sample((make((3, 5), noncontiguous=True), 2, 1), note="along dim 1, non-contiguous")
    yield Sample((make((0, 3)), 2), note="empty")


def _chunk_samples(make, dtype):
    yield Sample((make((5, 4)), 2))
    yield Sample((make((5, 4)), 3, 1), note="along dim 1")
    yield Sample((make((6,)), 4), note="fewer chunks than asked")
    yield Sample((make((6, 2), noncontiguous=True), 3, -2), note="non-contiguous")


def _view_normalize(op, args):
    args["size"] = infer_size(op.name, args["size"], numel(shape(args["input"])))


def _view_meta(x, size):
    strides = x._backend().strides(x._data)
    if view_strides(shape(x), strides, size) is None:
        raise ShapeError(f"view: size {size} is not compatible with the input's shape {shape(x)} and strides "
                         f"{strides} (at least one dimension spans two contiguous subspaces); "
                         f"use .reshape(...) instead")
    return size


defop("view(Tensor input, int[] size)", "view", samples=_view_samples, promotion=rules.passthrough, meta=_view_meta,
      derivative=lambda grad, input: F.reshape(grad, tuple(input.shape)),
      normalize=_view_normalize, view=True, layout_dependent=True, reference=lambda x, size: np.reshape(x, size),
      onnx=_view_onnx, batch=transforms.view, jvp=transforms.view_tangent,
      doc="the same storage in another shape; -1 infers one size")


def _permute_normalize(op, args):
    ndim = len(shape(args["input"]))
    dims = tuple(wrap_dim(op.name, d, ndim) for d in args["dims"])
    if sorted(dims) != list(range(ndim)):
        raise ShapeError(f"{op.name}: dims {args['dims']} are not a permutation of the {ndim} dimension(s) of a "
                         f"tensor of shape {shape(args['input'])}")
    args["dims"] = dims


defop("permute(Tensor input, int[] dims)", "view", samples=_permute_samples, promotion=rules.passthrough,
      derivative=lambda grad, dims: F.permute(grad, _inverse(dims)),
      meta=lambda x, dims: tuple(shape(x)[d] for d in dims), normalize=_permute_normalize, view=True,
      onnx=_permute_onnx, batch=transforms.permute, reference=lambda x, dims: np.transpose(x, dims))


def _expand_normalize(op, args):
    in_shape, size = shape(args["input"]), args["size"]
    if len(size) < len(in_shape):
        raise ShapeError(f"{op.name}: the number of sizes ({len(size)}) must be at least the tensor's number of "
                         f"dimensions ({len(in_shape)}); shape {in_shape}, size {size}")
    lead = len(size) - len(in_shape)
    out = list(size)
    for i, s in enumerate(size):
        current = in_shape[i - lead] if i >= lead else None
        if s == -1:
            if current is None:
                raise ShapeError(f"{op.name}: -1 is not allowed in a new leading dimension; size {size}")
            out[i] = current
        elif s < 0:
            raise ShapeError(f"{op.name}: the size {s} at dim {i} is negative (only -1, which keeps a size, is "
                             f"allowed); shape {in_shape}, size {size}")
        elif current is not None and current != 1 and current != s:
            raise ShapeError(f"{op.name}: the size {s} at dim {i} does not match the existing size {current} "
                             f"(only size-1 dimensions expand); shape {in_shape}, size {size}")
    args["size"] = tuple(out)


defop("expand(Tensor input, int[] size)", "view", samples=_expand_samples,
      promotion=rules.passthrough, meta=lambda x, size: size,
      derivative=lambda grad: grad,  # the engine sums broadcast gradients back to the input's shape
      normalize=_expand_normalize, view=True, reference=lambda x, size: np.broadcast_to(x, _expanded(x, size)),
      onnx=_expand_onnx, batch=transforms.expand, doc="size-1 dimensions repeated without copying; -1 keeps a size")


def _expanded(x, size) -> tuple:
    """``size`` with each -1 replaced by the input's size there (for the reference)."""
    lead = len(size) - np.ndim(x)
    return tuple(np.shape(x)[i - lead] if s == -1 else s for i, s in enumerate(size))


def _slice_normalize(op, args):
    x, dim, start, end, step = args["input"], args["dim"], args["start"], args["end"], args["step"]
    length = shape(x)[dim] if shape(x) else 1
    if not shape(x):
        raise ShapeError(f"{op.name}: cannot slice a 0-d tensor")
    if step <= 0:
        raise ArgumentError(f"{op.name}: step must be positive, got {step}")
    start = 0 if start is None else (start + length if start < 0 else start)
    end = length if end is None else (end + length if end < 0 else end)
    start = min(max(start, 0), length)
    end = min(max(end, start), length)
    args["start"], args["end"] = start, end


def _slice_meta(x, dim, start, end, step):
    out = list(shape(x))
    out[dim] = max(0, (end - start + step - 1) // step)
    return tuple(out)


defop("slice(Tensor input, dim dim=0, int? start=None, int? end=None, int step=1)", "view", samples=_slice_samples,
      derivative=lambda grad, input, dim, start, step: place_slice(grad, tuple(input.shape), dim, start, step),
      promotion=rules.passthrough, meta=_slice_meta, normalize=_slice_normalize, view=True, onnx=_slice_onnx,
      varying=("start", "end"), batch="dims", reference=lambda x, dim=0, start=None, end=None, step=1:
      x[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)],
      doc="input[..., start:end:step, ...] along dim, as a view")


def _unfold_normalize(op, args):
    x, size, step = args["input"], args["size"], args["step"]
    length = (shape(x) or (1,))[args["dimension"]]  # a 0-d input unfolds as one element
    require(0 <= size <= length, op.name, f"size {size} must be between 0 and the dimension's length {length}", x)
    require(step > 0, op.name, f"step must be positive, got {step}", x)


def _unfold_meta(x, dimension, size, step):
    """A 0-d input unfolds as one element: its result is the single window, of shape (size,), as in PyTorch."""
    in_shape = shape(x) or (1,)
    if not shape(x):
        return (size,)
    out = list(in_shape)
    out[dimension] = (in_shape[dimension] - size) // step + 1
    return tuple(out) + (size,)


def _unfold_reference(x, dimension, size, step):
    if x.ndim == 0:
        return _unfold_reference(x.reshape(1), 0, size, step)[0]
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dimension)
    index = [slice(None)] * windows.ndim
    index[dimension] = slice(None, None, step)
    return windows[tuple(index)]


defop("unfold(Tensor input, dim dimension, int size, int step)", "view", samples=_unfold_samples,
      promotion=rules.passthrough, derivative=_unfold_derivative,
      normalize=_unfold_normalize, meta=_unfold_meta, view=True, reference=_unfold_reference, onnx=_unfold_onnx,
      batch="dims",
      doc="sliding windows of length size along dimension, as a view with a new last dimension")

# -- copies and casts -------------------------------------------------------------------------
defop("clone(Tensor input)", "view", samples=_clone_samples, promotion=rules.passthrough, meta=lambda x: shape(x),
      onnx="Identity", derivative=lambda grad: grad, jvp="linear", batch="trailing", reference=np.copy,
      doc="a copy in fresh contiguous memory")


def _to_dtype_promotion(rt, op, args):
    return None, args["dtype"]


defop("to_dtype(Tensor input, dtype dtype)", "view", samples=_to_dtype_samples,
      promotion=_to_dtype_promotion, meta=lambda x, dtype: shape(x),
      derivative=lambda grad: grad,  # the engine casts gradients to each input's dtype
      reference=lambda x, dtype: x, method=False, onnx=_to_dtype_onnx, jvp="linear", batch="trailing",
      doc="a copy converted to dtype (C-style truncation of floats)")


def _copy_meta(dst, src):
    target, source = shape(dst), shape(src)
    try:
        from ...schema.meta import broadcast_shapes
        ok = broadcast_shapes("copy_", target, source) == target
    except ShapeError:
        ok = False
    require(ok, "copy_", f"source of shape {source} cannot be broadcast to the destination's shape {target}")
    return target


defop("copy_(Index self, Index src)", "view", torch_keywords={"input": "self"}, samples=_copy_samples,
      promotion=rules.passthrough, meta=_copy_meta, mutates=True,
      derivative=lambda grad: (None, grad),  # the old values of self are overwritten
      jvp=transforms.copy_tangent, batch=transforms.copy_, method=False,
      reference=lambda dst, src: np.broadcast_to(src, np.shape(dst)),
      doc="writes src (broadcast and cast) into self")


# -- joining ----------------------------------------------------------------------------------

def _cat_meta(tensors, dim=0):
    first = shape(tensors[0])
    require(len(first) > 0, "cat", "zero-dimensional tensors cannot be concatenated", *tensors)
    total = 0
    for t in tensors:
        s = shape(t)
        require(len(s) == len(first) and all(a == b for i, (a, b) in enumerate(zip(s, first)) if i != dim),
                "cat", f"sizes must match except in dim {dim}", *tensors)
        total += s[dim]
    return first[:dim] + (total,) + first[dim + 1:]


defop("cat(Tensor[] tensors, dim dim=0)", "view", dtypes="all+complex", samples=_cat_samples,
      promotion=rules.same, meta=_cat_meta, method=False, autocast="promote",
      derivative=_cat_derivative, onnx=_cat_onnx, jvp="linear", batch=transforms.cat,
      reference=lambda tensors, dim=0: np.concatenate(tensors, axis=dim),
      doc="joins tensors along an existing dim (promoting dtypes)")


def _stack(tensors, dim=0):
    dim = wrap_dim("stack", dim, len(shape(tensors[0])) + 1)
    return F.cat([F.unsqueeze(t, dim) for t in tensors], dim)


def _stack_meta(tensors, dim=0):
    first = shape(tensors[0])
    require(all(shape(t) == first for t in tensors), "stack", "expects every tensor to have the same shape",
            *tensors)
    dim = wrap_dim("stack", dim, len(first) + 1)
    return first[:dim] + (len(tensors),) + first[dim:]


defop("stack(Tensor[] tensors, int dim=0)", "view", dtypes="all+complex", samples=_stack_samples,
      kind="composite", promotion=rules.same, meta=_stack_meta, autocast="promote",
      composite=_stack, method=False, reference=lambda tensors, dim=0: np.stack(tensors, axis=dim), onnx=_stack_onnx,
      doc="joins same-shaped tensors along a new dim")


# -- composite views and reshapes --------------------------------------------------------------

def _reshape(x, shape_):
    size = infer_size("reshape", tuple(shape_), x.numel())
    if view_strides(tuple(x.shape), x.stride(), size) is not None:
        return F.view(x, size)
    return F.view(F.clone(x), size)


defop("reshape(Tensor input, int[] shape)", "view", samples=_reshape_samples,
      kind="composite", promotion=rules.passthrough,
      meta=lambda x, shape_: infer_size("reshape", shape_, numel(shape(x))), composite=_reshape, onnx=_reshape_onnx,
      reference=lambda x, shape_: np.reshape(x, shape_),
      doc="a view when the strides allow it, else a copy")


def _transpose(x, dim0, dim1):
    dims = list(range(x.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return F.permute(x, dims)


def _transpose_meta(x, dim0, dim1):
    out = list(shape(x))
    if out:
        out[dim0], out[dim1] = out[dim1], out[dim0]
    return tuple(out)


defop("transpose(Tensor input, dim dim0, dim dim1)", "view", samples=_transpose_samples,
      kind="composite", promotion=rules.passthrough,
      meta=_transpose_meta, composite=lambda x, d0, d1: x if x.ndim == 0 else _transpose(x, d0, d1),
      onnx=_transpose_onnx,
      reference=lambda x, d0, d1: np.swapaxes(x, d0, d1) if x.ndim else x)


def _t_normalize(op, args):
    ndim = len(shape(args["input"]))
    require(ndim <= 2, op.name, f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D", args["input"])


def _t_samples(make, dtype):
    yield Sample((make((3, 5)),))
    yield Sample((make((4, 2), noncontiguous=True),), note="non-contiguous")
    yield Sample((make((3,)),), note="1-D")
    yield Sample((make(()),), note="0-d")


defop("t(Tensor input)", "view", samples=_t_samples, kind="composite", promotion=rules.passthrough,
      normalize=_t_normalize, meta=lambda x: shape(x)[::-1],
      composite=lambda x: F.permute(x, tuple(reversed(range(x.ndim)))), reference=np.transpose,
      doc="the transpose of a tensor of at most 2 dims (1-D and 0-d tensors as they are), as a view")


def _dims(dim, ndim) -> tuple:
    """A user's dim (None, an int or a list) as non-negative dims (for references)."""
    if dim is None:
        return tuple(range(ndim))
    return tuple(d % max(ndim, 1) for d in ((dim,) if isinstance(dim, int) else dim))


def _squeeze_shape(in_shape, dim):
    dims = range(len(in_shape)) if dim is None else dim
    return tuple(s for i, s in enumerate(in_shape) if not (i in dims and s == 1))


defop("squeeze(Tensor input, dim[]? dim=None)", "view", samples=_squeeze_samples,
      kind="composite", promotion=rules.passthrough,
      meta=lambda x, dim=None: _squeeze_shape(shape(x), dim),
      composite=lambda x, dim=None: F.view(x, _squeeze_shape(tuple(x.shape), dim)), onnx=_squeeze_onnx,
      reference=lambda x, dim=None: np.squeeze(x, axis=tuple(d for d in _dims(dim, np.ndim(x)) if np.shape(x)[d] == 1)),
      doc="drops size-1 dims (all of them, or those in dim)")


def _unsqueeze_normalize(op, args):
    args["dim"] = wrap_dim(op.name, args["dim"], len(shape(args["input"])) + 1)  # a dim of the result


def _unsqueeze_shape(in_shape, dim):
    return in_shape[:dim] + (1,) + in_shape[dim:]


defop("unsqueeze(Tensor input, int dim)", "view", samples=_unsqueeze_samples,
      kind="composite", promotion=rules.passthrough, normalize=_unsqueeze_normalize, view=True,
      meta=lambda x, dim: _unsqueeze_shape(shape(x), dim),
      composite=lambda x, dim: F.view(x, _unsqueeze_shape(tuple(x.shape), dim)), onnx=_unsqueeze_onnx,
      reference=lambda x, dim: np.expand_dims(x, dim))


def _flatten_shape(in_shape, start, end):
    if not in_shape:
        return (1,)
    start = wrap_dim("flatten", start, len(in_shape))
    end = wrap_dim("flatten", end, len(in_shape))
    if start > end:
        raise ShapeError(f"flatten: start_dim {start} cannot come after end_dim {end}")
    return in_shape[:start] + (math.prod(in_shape[start:end + 1]),) + in_shape[end + 1:]


defop("flatten(Tensor input, int start_dim=0, int end_dim=-1)", "view", samples=_flatten_samples, kind="composite",
      promotion=rules.passthrough, meta=lambda x, s=0, e=-1: _flatten_shape(shape(x), s, e),
      composite=lambda x, s=0, e=-1: F.reshape(x, _flatten_shape(tuple(x.shape), s, e)), onnx=_flatten_onnx,
      reference=lambda x, s=0, e=-1: np.reshape(x, _flatten_shape(np.shape(x), s, e)))


def _unflatten_shape(in_shape, dim, sizes):
    dim = wrap_dim("unflatten", dim, len(in_shape))  # wrapped already but in the reference
    sizes = infer_size("unflatten", tuple(sizes), in_shape[dim])
    return in_shape[:dim] + sizes + in_shape[dim + 1:]


def _unflatten_meta(x, dim, sizes):
    require_dims("unflatten", x)
    return _unflatten_shape(shape(x), dim, sizes)


defop("unflatten(Tensor input, dim dim, int[] sizes)", "view", samples=_unflatten_samples,
      kind="composite", promotion=rules.passthrough, meta=_unflatten_meta,
      composite=lambda x, d, s: F.view(x, _unflatten_shape(tuple(x.shape), d, s)), onnx=_unflatten_onnx,
      reference=lambda x, d, s: np.reshape(x, _unflatten_shape(np.shape(x), d, s)))


def _select_normalize(op, args):
    x, dim, index = args["input"], args["dim"], args["index"]
    require_dims(op.name, x, OutOfRangeError)
    args["index"] = check_index(op.name, x, dim, index)


def _select(x, dim, index):
    return F.squeeze(F.slice(x, dim, index, index + 1), dim)


defop("select(Tensor input, dim dim, int index)", "view", samples=_select_samples,
      kind="composite", promotion=rules.passthrough, normalize=_select_normalize, view=True, varying=("index",),
      meta=lambda x, dim, index: shape(x)[:dim] + shape(x)[dim + 1:], composite=_select, onnx=_select_onnx,
      reference=lambda x, dim, index: np.take(x, index, axis=dim), doc="input[..., index, ...] as a view")


def _split_sizes(length, split, op_name):
    if not isinstance(split, (list, tuple)):
        split = int_argument(op_name, "split_size", split)
        if split <= 0 and length:
            raise ArgumentError(f"{op_name}: split_size must be positive, got {split}")
        return [min(split, length - i) for i in range(0, length, split)] if length else [0]
    split = [int_argument(op_name, "split_sizes", size) for size in split]
    if sum(split) != length:
        raise ShapeError(f"{op_name}: sections {split} do not add up to the dimension's length {length}")
    return split


def _split(x, split_size_or_sections, dim=0):
    out, start = [], 0
    for size in _split_sizes(x.shape[dim], split_size_or_sections, "split"):
        out.append(F.slice(x, dim, start, start + size))
        start += size
    return tuple(out)


def _split_meta(x, split, dim=0, op_name="split"):
    require_dims(op_name, x)
    sizes = _split_sizes(shape(x)[dim], split, "split")
    return tuple(shape(x)[:dim] + (s,) + shape(x)[dim + 1:] for s in sizes)


def _split_normalize(op, args):
    require_dims(op.name, args["input"])
    _split_sizes(shape(args["input"])[args["dim"]], args["split_size_or_sections"], op.name)


def _split_reference(x, split, dim=0):
    sizes = _split_sizes(x.shape[dim], split, "split")
    return np.split(x, np.cumsum(sizes)[:-1], axis=dim)


defop("split(Tensor input, Any split_size_or_sections, dim dim=0)", "view", samples=_split_samples, kind="composite",
      torch_keywords={"split_size": "split_size_or_sections"}, numpy_keywords=False,
      promotion=rules.passthrough, normalize=_split_normalize, meta=_split_meta, composite=_split,
      reference=_split_reference, onnx=_split_onnx,
      outputs=("*",), doc="views of consecutive pieces: equal sizes (the last may be smaller) or given sections")


def _chunk(x, chunks, dim=0):
    if chunks <= 0:
        raise ArgumentError(f"chunk: chunks must be positive, got {chunks}")
    length = x.shape[dim]
    return _split(x, max(-(-length // chunks), 1), dim)


def _chunk_meta(x, chunks, dim=0):
    require_dims("chunk", x)
    return _split_meta(x, max(-(-shape(x)[dim] // max(chunks, 1)), 1), dim, "chunk")


def _chunk_reference(x, chunks, dim=0):
    return _split_reference(x, max(-(-x.shape[dim] // chunks), 1), dim)


defop("chunk(Tensor input, int chunks, dim dim=0)", "view", samples=_chunk_samples,
      kind="composite", promotion=rules.passthrough,
      meta=_chunk_meta,
      composite=_chunk, reference=_chunk_reference, outputs=("*",), onnx=_chunk_onnx,
      doc="at most chunks views of equal size (the last may be smaller), as in PyTorch")
