"""Rearranging dims and elements: movedim, adjoint, ravel, tile, rot90, fliplr/flipud, atleast_Nd, the
``*stack`` joins, the splits (tensor_split, split_with_sizes, h/v/dsplit), unravel_index and repeat_interleave.

Every op is a composite over the views, cat, flip, repeat and index_select, so it runs on every backend and
differentiates through its parts. PyTorch's sugar that NumPy shares (hstack, hsplit, ...) follows NumPy's rules.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.binding import int_argument
from ...execution.dispatcher import note_value_read, wrap_dim
from ...schema.dtypes import int64
from ...schema.errors import ArgumentError, DtypeError, OutOfRangeError, ShapeError, describe
from ...schema.meta import numel, require, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import conj
from ..namespace import F


def _is_tensor(value) -> bool:
    return hasattr(value, "_data")


# -- movedim (moveaxis, swapdims and swapaxes are aliases in ember.aliases) --------------------------------

def _moved_order(op_name: str, ndim: int, source: tuple, destination: tuple) -> tuple:
    """The permutation that puts each dim of ``source`` at the matching place of ``destination``."""
    if len(source) != len(destination):
        raise ArgumentError(f"{op_name}: Invalid source or destination dims: source ({list(source)} dims) should "
                            f"contain the same number of dims as destination ({list(destination)} dims)")
    if not ndim:  # a 0-d tensor: dims 0 and -1 name its one (absent) dim
        return ()
    order = [-1] * ndim
    for s, d in zip(source, destination):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in source)
    return tuple(next(rest) if o < 0 else o for o in order)


def _movedim_normalize(op, args):
    for name in ("source", "destination"):
        if args[name] is None:
            raise TypeError(f"{op.name}(): argument '{name}' must be an int or a sequence of ints, not None")


def _movedim_samples(make, dtype):
    yield Sample((make((2, 3, 4)), 0, -1))
    yield Sample((make((2, 3, 4, 5)), (0, 1), (3, 0)), note="several dims")
    yield Sample((make((3, 4), noncontiguous=True), -1, 0), note="non-contiguous")
    yield Sample((make(()), 0, 0), note="0-d")


def _np_movedim(x, source, destination):
    return np.moveaxis(x, source, destination) if np.ndim(x) else np.array(x)


defop("movedim(Tensor input, dim[]? source, dim[]? destination)", "view", kind="composite",
      promotion=rules.passthrough, normalize=_movedim_normalize,
      meta=lambda x, s, d: tuple(shape(x)[i] for i in _moved_order("movedim", len(shape(x)), s, d)),
      composite=lambda x, s, d: F.permute(x, _moved_order("movedim", x.ndim, s, d)),
      reference=_np_movedim, samples=_movedim_samples,
      doc="a view with the dims in source moved to the places in destination; the others keep their order "
          "(moveaxis is its other name)")


# -- adjoint ---------------------------------------------------------------------------------------------

def _adjoint_normalize(op, args):
    ndim = len(shape(args["input"]))
    require(ndim >= 2, op.name, f"tensor.adjoint() is only supported on matrices or batches of matrices. "
                                f"Got {ndim}-D tensor", args["input"])


def _adjoint_samples(make, dtype):
    yield Sample((make((3, 5)),))
    yield Sample((make((2, 3, 4), noncontiguous=True),), note="batched, non-contiguous")
    yield Sample((make((2, 0, 3)),), note="empty")


defop("adjoint(Tensor input)", "view", samples=_adjoint_samples, kind="composite", promotion=rules.passthrough,
      normalize=_adjoint_normalize, meta=lambda x: shape(x)[:-2] + shape(x)[:-3:-1],
      composite=lambda x: F.transpose(conj(x), -2, -1), reference=lambda x: np.conj(np.swapaxes(x, -2, -1)),
      doc="the conjugate transpose of the last two dims: for real tensors transpose(-2, -1), a view; for complex "
          "ones a conjugated copy (Ember has no lazy conjugate views); input has at least 2 dims")


# -- ravel, tile, rot90, fliplr, flipud -------------------------------------------------------------------

def _one_input_samples(*shapes):
    def samples(make, dtype):
        for s in shapes:
            yield Sample((make(s),))
        yield Sample((make((3, 4), noncontiguous=True),), note="non-contiguous")
    return samples


defop("ravel(Tensor input)", "view", kind="composite", promotion=rules.passthrough,
      meta=lambda x: (numel(shape(x)),), composite=lambda x: F.reshape(x, (-1,)),
      reference=lambda x: np.ravel(x).copy(), samples=_one_input_samples((2, 3, 4), (), (0, 3)),
      doc="the elements in row-major order as a 1-D tensor: a view where the strides allow it, else a copy")


def _tile_reps(in_shape: tuple, dims: tuple) -> tuple:
    """dims padded with leading ones to input's rank (repeat then adds any further leading dims)."""
    return (1,) * (len(in_shape) - len(dims)) + tuple(dims)


def _tile_normalize(op, args):
    if any(d < 0 for d in args["dims"]):
        raise ArgumentError(f"tile: dims must be non-negative, got {args['dims']}")


def _tile_meta(x, dims):
    reps = _tile_reps(shape(x), dims)
    padded = (1,) * (len(reps) - len(shape(x))) + shape(x)
    return tuple(s * r for s, r in zip(padded, reps))


def _tile_samples(make, dtype):
    yield Sample((make((2, 3)), (2, 1)))
    yield Sample((make((2, 3)), (3,)), note="fewer reps than dims")
    yield Sample((make((3,), noncontiguous=True), (2, 2)), note="more reps than dims")
    yield Sample((make(()), (2,)), note="0-d")
    yield Sample((make((2, 2)), (0, 1)), note="zero reps")


defop("tile(Tensor input, int[] dims)", "view", kind="composite", promotion=rules.passthrough,
      normalize=_tile_normalize, meta=_tile_meta,
      composite=lambda x, dims: F.repeat(x, _tile_reps(tuple(x.shape), dims)),
      reference=lambda x, dims: np.tile(x, dims), samples=_tile_samples,
      doc="input repeated dims[i] times along each dim, as NumPy's tile (dims padded with leading ones)")


def _rot90_normalize(op, args):
    x, dims = args["input"], args["dims"]
    ndim = len(shape(x))
    if len(dims) != 2:
        raise ArgumentError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise ShapeError(f"rot90: expected total dims >= 2, but got total dims = {ndim} ({describe(x)})")
    wrapped = tuple(wrap_dim("rot90", d, ndim) for d in dims)
    if wrapped[0] == wrapped[1]:
        raise ArgumentError(f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} and "
                            f"dim1 = {dims[1]}")
    args["dims"] = wrapped


def _rot90(x, k=1, dims=(0, 1)):
    k %= 4
    d0, d1 = dims
    if k == 1:
        return F.transpose(F.flip(x, (d1,)), d0, d1)
    if k == 2:
        return F.flip(x, (d0, d1))
    if k == 3:
        return F.flip(F.transpose(x, d0, d1), (d1,))
    return F.clone(x)


def _rot90_meta(x, k=1, dims=(0, 1)):
    out = list(shape(x))
    if k % 2:
        out[dims[0]], out[dims[1]] = out[dims[1]], out[dims[0]]
    return tuple(out)


def _rot90_samples(make, dtype):
    yield Sample((make((2, 3)),))
    yield Sample((make((2, 3, 4)), 2, (2, 0)), note="k=2, other dims")
    yield Sample((make((3, 4), noncontiguous=True), -1, (0, -1)), note="k=-1")
    yield Sample((make((2, 3)), 4), note="a full turn")


defop("rot90(Tensor input, int k=1, int[] dims=[0, 1])", "view", kind="composite", promotion=rules.passthrough,
      normalize=_rot90_normalize, meta=_rot90_meta, composite=_rot90,
      reference=lambda x, k=1, dims=(0, 1): np.rot90(x, k, tuple(dims)).copy(), samples=_rot90_samples,
      doc="a copy rotated by 90 degrees k times, from the first dim of dims towards the second")


def _flip_one(name: str, dim: int, min_ndim: int):
    def meta(x):
        require(len(shape(x)) >= min_ndim, name, f"Input must be >= {min_ndim}-d.", x)
        return shape(x)

    return dict(kind="composite", promotion=rules.passthrough, meta=meta, composite=lambda x: F.flip(x, (dim,)),
                reference=lambda x: np.flip(x, dim).copy(), samples=_one_input_samples((3, 4), (2, 3, 2)))


defop("fliplr(Tensor input)", "view", doc="a copy with the columns (dim 1) in reverse order; input at least 2-D",
      **_flip_one("fliplr", 1, 2))
defop("flipud(Tensor input)", "view", doc="a copy with the rows (dim 0) in reverse order; input at least 1-D",
      **_flip_one("flipud", 0, 1))


# -- atleast_1d/2d/3d ---------------------------------------------------------------------------------------

def _at_least(in_shape: tuple, ndim: int) -> tuple:
    """NumPy's atleast_Nd shapes: () -> (1,)*n; (a,) -> (1, a) or (1, a, 1); (a, b) -> (a, b, 1)."""
    if len(in_shape) >= ndim:
        return in_shape
    if ndim == 3 and len(in_shape) == 1:
        return (1,) + in_shape + (1,)
    if ndim == 3 and len(in_shape) == 2:
        return in_shape + (1,)
    return (1,) * (ndim - len(in_shape)) + in_shape


def _at_least_samples(make, dtype):
    for s in ((), (3,), (2, 3), (2, 1, 2, 2)):
        yield Sample((make(s),), note=f"{len(s)}-d")


def _declare_at_least(signature: str, ndim: int):
    defop(signature, "view", kind="composite", promotion=rules.passthrough,
          meta=lambda x: _at_least(shape(x), ndim),
          composite=lambda x: x if x.ndim >= ndim else F.view(x, _at_least(tuple(x.shape), ndim)),
          reference=getattr(np, f"atleast_{ndim}d"), samples=_at_least_samples, method=False,
          doc=f"input viewed with at least {ndim} dims (as NumPy's atleast_{ndim}d); a tensor list gives a tuple")


_declare_at_least("atleast_1d(Tensor input)", 1)
_declare_at_least("atleast_2d(Tensor input)", 2)
_declare_at_least("atleast_3d(Tensor input)", 3)


# -- hstack, vstack (row_stack), dstack, column_stack --------------------------------------------------------

def _column(in_shape: tuple) -> tuple:
    """column_stack's piece shape: 0-d and 1-D inputs become columns."""
    return (numel(in_shape), 1) if len(in_shape) <= 1 else in_shape


#: name -> (the shape each piece takes, the dim they join along given the first piece's shaped rank)
_STACKS = {
    "hstack": (lambda s: _at_least(s, 1), lambda rank: 0 if rank == 1 else 1),
    "vstack": (lambda s: _at_least(s, 2), lambda rank: 0),
    "dstack": (lambda s: _at_least(s, 3), lambda rank: 2),
    "column_stack": (_column, lambda rank: 1),
}


def _stack_plan(name: str, shapes: list) -> tuple:
    if not shapes:
        raise ArgumentError(f"{name}: expects a non-empty list of tensors")
    shaped_as, along = _STACKS[name]
    pieces = [shaped_as(s) for s in shapes]
    dim = along(len(pieces[0]))
    rank = len(pieces[0])
    for piece, original in zip(pieces, shapes):
        if len(piece) != rank or any(a != b for d, (a, b) in enumerate(zip(piece, pieces[0])) if d != dim):
            raise ShapeError(f"{name}: sizes of tensors must match except in dimension {dim}; got shapes "
                             f"{', '.join(str(tuple(s)) for s in shapes)}")
    return pieces, dim


def _declare_stack(signature: str, reference):
    name = signature.split("(")[0]

    def composite(tensors):
        pieces, dim = _stack_plan(name, [tuple(t.shape) for t in tensors])
        return F.cat([F.reshape(t, p) for t, p in zip(tensors, pieces)], dim)

    def meta(tensors):
        pieces, dim = _stack_plan(name, [shape(t) for t in tensors])
        return pieces[0][:dim] + (sum(p[dim] for p in pieces),) + pieces[0][dim + 1:]

    def samples(make, dtype):
        yield Sample(([make((2, 3)), make((2, 3), noncontiguous=True)],))
        yield Sample(([make((3,)), make((3,))],), note="1-D")
        yield Sample(([make(()), make(())],), note="0-d")
        yield Sample(([make((2, 1, 2)), make((2, 1, 2))],), note="3-D")

    defop(signature, "view", kind="composite", promotion=rules.same, dtypes="all+complex", meta=meta,
          composite=composite, reference=lambda tensors: reference(tensors), samples=samples, method=False,
          autocast="promote",
          doc=f"joins tensors as NumPy's {reference.__name__} does (promoting dtypes)")


_declare_stack("hstack(Tensor[] tensors)", np.hstack)
_declare_stack("vstack(Tensor[] tensors)", np.vstack)
_declare_stack("dstack(Tensor[] tensors)", np.dstack)
_declare_stack("column_stack(Tensor[] tensors)", np.column_stack)


# -- tensor_split, split_with_sizes, hsplit, vsplit, dsplit -------------------------------------------------

MAX_PIECES = 2 ** 31 - 1  # the most tensors one split returns


def _split_points(op_name: str, length: int, indices_or_sections) -> list:
    """The (start, end) of each piece: ``sections`` nearly equal pieces (the first ones one longer) or pieces
    cut at ``indices`` (clipped to the length, as Python slicing does)."""
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise ArgumentError(f"{op_name}: number of sections must be larger than 0, got {sections}")
        if sections > MAX_PIECES:  # a list of that many tensors cannot be made: PyTorch's vector refuses it too
            raise ArgumentError(f"{op_name}: {sections} sections would make {sections} tensors, more than the "
                                f"{MAX_PIECES} a list of results can hold")
        small, extra = divmod(length, sections)
        ends = [(i + 1) * small + min(i + 1, extra) for i in range(sections)]
        return list(zip([0] + ends[:-1], ends))
    cuts = [min(max(i + length if i < 0 else i, 0), length) for i in indices_or_sections]
    starts, ends = [0] + cuts, cuts + [length]
    return [(s, max(s, e)) for s, e in zip(starts, ends)]


def _sections_or_indices(op_name: str, value):
    """An int, a sequence of ints, or an integer tensor (0-d: sections, 1-D: indices), as PyTorch takes."""
    if _is_tensor(value):
        if value._dtype.kind != "int" or len(value.shape) > 1:
            raise DtypeError(f"{op_name}: tensor_indices_or_sections must be a 0-d or 1-D integer tensor on the "
                             f"CPU, got {describe(value)}")
        note_value_read()
        return value.item() if len(value.shape) == 0 else [int(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [int_argument(op_name, "indices", v) for v in value]
    return int_argument(op_name, "sections", value)


def _tensor_split_normalize(op, args):
    if not shape(args["input"]):
        raise ShapeError(f"tensor_split: expected at least a 1-dimensional tensor, got {describe(args['input'])}")
    args["indices_or_sections"] = _sections_or_indices("tensor_split", args["indices_or_sections"])


def _pieces(x, points, dim):
    return tuple(F.slice(x, dim, start, end) for start, end in points)


def _tensor_split(x, indices_or_sections, dim=0):
    return _pieces(x, _split_points("tensor_split", x.shape[dim], indices_or_sections), dim)


def _piece_shapes(in_shape: tuple, points, dim: int) -> tuple:
    return tuple(in_shape[:dim] + (end - start,) + in_shape[dim + 1:] for start, end in points)


def _np_pieces(x, points, dim):
    return tuple(np.take(x, np.arange(start, end), axis=dim) for start, end in points)


def _tensor_split_samples(make, dtype):
    yield Sample((make((7, 2)), 3), note="sections, the first longer")
    yield Sample((make((3, 6), noncontiguous=True), [1, 4], 1), note="indices")
    yield Sample((make((5,)), [4, 2, 9]), note="decreasing and past-the-end indices: empty pieces")
    yield Sample((make((2, 5)), 7, -1), note="more sections than elements")


defop("tensor_split(Tensor input, Any indices_or_sections, dim dim=0)", "view", kind="composite",
      torch_keywords={"sections": "indices_or_sections", "indices": "indices_or_sections",
                      "tensor_indices_or_sections": "indices_or_sections"},
      promotion=rules.passthrough, normalize=_tensor_split_normalize, outputs=("*",),
      meta=lambda x, split, dim=0: _piece_shapes(shape(x), _split_points("tensor_split", shape(x)[dim], split), dim),
      composite=_tensor_split, samples=_tensor_split_samples,
      reference=lambda x, split, dim=0: _np_pieces(x, _split_points("tensor_split", x.shape[dim], split), dim),
      doc="views of input cut into sections nearly equal pieces, or at the given indices, along dim "
          "(NumPy's array_split)")


def _split_with_sizes_normalize(op, args):
    x, sizes, dim = args["input"], args["split_sizes"], args["dim"]
    if not shape(x):
        raise ShapeError(f"{op.name}: expected at least a 1-dimensional tensor, got {describe(x)}")
    if any(s < 0 for s in sizes) or sum(sizes) != shape(x)[dim]:
        raise ShapeError(f"{op.name} expects split_sizes to sum exactly to {shape(x)[dim]} (input tensor's "
                         f"size at dimension {dim}), but got split_sizes={list(sizes)}")


def _size_points(sizes) -> list:
    ends = list(np.cumsum([0] + list(sizes)))
    return [(int(s), int(e)) for s, e in zip(ends[:-1], ends[1:])]


def _split_with_sizes_samples(make, dtype):
    yield Sample((make((5, 2)), [2, 3]))
    yield Sample((make((2, 6), noncontiguous=True), [1, 0, 5], -1), note="an empty piece")
    yield Sample((make((4,)), [4]), note="one piece")


defop("split_with_sizes(Tensor input, int[] split_sizes, dim dim=0)", "view", kind="composite",
      promotion=rules.passthrough, normalize=_split_with_sizes_normalize, outputs=("*",),
      meta=lambda x, sizes, dim=0: _piece_shapes(shape(x), _size_points(sizes), dim),
      composite=lambda x, sizes, dim=0: _pieces(x, _size_points(sizes), dim), samples=_split_with_sizes_samples,
      reference=lambda x, sizes, dim=0: _np_pieces(x, _size_points(sizes), dim),
      doc="views of consecutive pieces of the given sizes along dim")


def _declare_directional_split(signature: str, min_ndim: int, along):
    """hsplit, vsplit and dsplit: tensor_split along a fixed dim, where whole sections must divide it."""
    name = signature.split("(")[0]

    def points(in_shape: tuple, value):
        if len(in_shape) < min_ndim:
            raise ShapeError(f"torch.{name} requires a tensor with at least {min_ndim} dimension, but got a tensor "
                             f"with {len(in_shape)} dimensions!")
        dim = along(len(in_shape))
        value = _sections_or_indices(name, value)
        if isinstance(value, int) and value > 0 and in_shape[dim] % value:
            raise ShapeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                             f"{in_shape[dim]} is not divisible by the split_size {value}!")
        if isinstance(value, int) and value <= 0:
            raise ArgumentError(f"{name}: the number of sections must be positive, got {value}")
        return _split_points(name, in_shape[dim], value), dim

    def composite(x, indices_or_sections):
        cuts, dim = points(tuple(x.shape), indices_or_sections)
        return _pieces(x, cuts, dim)

    def meta(x, indices_or_sections):
        cuts, dim = points(shape(x), indices_or_sections)
        return _piece_shapes(shape(x), cuts, dim)

    def reference(x, indices_or_sections):
        cuts, dim = points(np.shape(x), indices_or_sections)
        return _np_pieces(x, cuts, dim)

    def samples(make, dtype):
        yield Sample((make((2, 4, 6)), 2), note="sections")
        yield Sample((make((4, 6, 2), noncontiguous=True), [1, 3]), note="indices")
        yield Sample((make((6, 6, 3)), [5, 2]), note="decreasing indices")

    defop(signature, "view", kind="composite", promotion=rules.passthrough, outputs=("*",), meta=meta,
          composite=composite, reference=reference, samples=samples,
          torch_keywords={"sections": "indices_or_sections", "indices": "indices_or_sections"},
          doc=f"tensor_split along dim {along(3)} (dim 0 for a 1-D hsplit); sections must divide that dim")


_declare_directional_split("hsplit(Tensor input, Any indices_or_sections)", 1, lambda ndim: 0 if ndim == 1 else 1)
_declare_directional_split("vsplit(Tensor input, Any indices_or_sections)", 2, lambda ndim: 0)
_declare_directional_split("dsplit(Tensor input, Any indices_or_sections)", 3, lambda ndim: 2)


# -- unravel_index ----------------------------------------------------------------------------------------

def _unravel_normalize(op, args):
    indices, sizes = args["indices"], args["shape"]
    if indices._dtype.kind != "int":
        raise DtypeError(f"unravel_index: expected 'indices' to be an integer tensor, got {describe(indices)}")
    if any(s < 0 for s in sizes):
        raise ArgumentError(f"unravel_index: 'shape' cannot have negative values, got {tuple(sizes)}")
    total = math.prod(sizes)
    if indices.numel():
        note_value_read()
        low, high = F.amin(indices).item(), F.amax(indices).item()
        if low < -total or high >= total:
            raise OutOfRangeError(f"unravel_index: index {high if high >= total else low} is out of bounds for "
                                  f"shape {tuple(sizes)} (expected {-total}..{total - 1}; {describe(indices)})")


def _unravel_index(indices, shape_):
    total = math.prod(shape_)
    flat = F.remainder(F.to_dtype(indices, int64), total) if total else F.to_dtype(indices, int64)
    out = []
    for size in reversed(shape_):
        out.append(F.remainder(flat, size))
        flat = F.floor_divide(flat, size)
    return tuple(reversed(out))


def _unravel_reference(indices, shape_):
    total = math.prod(shape_)
    return tuple(np.asarray(c, np.int64) for c in np.unravel_index(np.remainder(indices, total), shape_))


def _unravel_samples(make, dtype):
    yield Sample((make((2, 3), low=-24, high=24), (2, 3, 4)), note="negative indices count from the end")
    yield Sample((make((), low=0, high=6), (6,)), note="0-d, 1-D shape")
    yield Sample((make((0,), low=0, high=4), (2, 2)), note="empty")


defop("unravel_index(Tensor indices, int[] shape)", "indexing", kind="composite", promotion=rules.to_int64,
      dtypes="int", normalize=_unravel_normalize, method=False, differentiable=False, outputs=("*",),
      meta=lambda indices, shape_: (shape(indices),) * len(shape_), composite=_unravel_index,
      reference=_unravel_reference, samples=_unravel_samples,
      doc="the coordinates (one int64 tensor per dim of shape) of flat row-major indices")


# -- repeat_interleave --------------------------------------------------------------------------------------

def _check_counts(repeats) -> None:
    note_value_read()
    if repeats.numel() and F.amin(repeats).item() < 0:
        raise ArgumentError(f"repeat_interleave: repeats can not be negative ({describe(repeats)})")


def _repeat_interleave_normalize(op, args):
    x, repeats, dim = args["input"], args["repeats"], args["dim"]
    if repeats is None:  # repeat_interleave(repeats): the positions 0, 1, ... each repeated
        if x._dtype.kind != "int" or len(shape(x)) != 1:
            raise DtypeError(f"repeat_interleave: repeats must be a 1-D integer tensor, got {describe(x)}")
        _check_counts(x)
    elif _is_tensor(repeats):
        if repeats._dtype.kind != "int" or len(repeats.shape) > 1:
            raise DtypeError(f"repeat_interleave: repeats must be an int or a 0-d or 1-D integer tensor, "
                             f"got {describe(repeats)}")
        length = numel(shape(x)) if dim is None else (shape(x)[dim] if shape(x) else 1)
        require(repeats.numel() in (1, length), "repeat_interleave",
                f"repeats must have the same size as input along dim ({length}), or one element", x, repeats)
        _check_counts(repeats)
        if repeats.numel() == 1:
            args["repeats"] = int(repeats.item())
    elif int_argument("repeat_interleave", "repeats", repeats) < 0:
        raise ArgumentError(f"repeat_interleave: repeats must be a non-negative int or an integer tensor, "
                            f"got {repeats!r}")


def _block_ids(repeats, total: int):
    """For each of ``total`` output positions, the input position it copies: repeats[i] copies of i in order.
    Ends of the blocks are marked (zero-length blocks mark one position twice), and a running count of the
    marks is the block id."""
    ends = F.cumsum(F.to_dtype(repeats, int64), 0)
    marks = F.zeros((total + 1,), dtype=int64, device=repeats.device)
    marks = F.index_put_(marks, [F.slice(ends, 0, 0, -1)], F.ones((), dtype=int64, device=repeats.device), True)
    return F.slice(F.cumsum(marks, 0), 0, 0, total)


def _total(repeats, output_size) -> int:
    return output_size if output_size is not None else int(F.sum(repeats).item())


def _repeat_interleave(x, repeats=None, dim=None, output_size=None):
    if repeats is None:  # the positions, in the counts' dtype as PyTorch gives them
        return F.to_dtype(_block_ids(x, _total(x, output_size)), x.dtype)
    if dim is None:
        x, dim = F.reshape(x, (-1,)), 0
    if x.ndim == 0:
        x = F.reshape(x, (1,))
    if not _is_tensor(repeats):
        spread = F.expand(F.unsqueeze(x, dim + 1), tuple(x.shape[:dim + 1]) + (repeats,) + tuple(x.shape[dim + 1:]))
        return F.flatten(spread, dim, dim + 1)
    return F.index_select(x, dim, _block_ids(repeats, _total(repeats, output_size)))


def _repeat_interleave_meta(x, repeats=None, dim=None, output_size=None):
    if repeats is None:
        return (output_size,)
    in_shape = (numel(shape(x)),) if dim is None else (shape(x) or (1,))
    d = 0 if dim is None else dim
    if _is_tensor(repeats):
        size = output_size
    else:
        size = in_shape[d] * repeats
        if output_size is not None and output_size != size:
            raise ArgumentError(f"repeat_interleave: Invalid output_size, expected {size} but got {output_size}")
    return in_shape[:d] + (size,) + in_shape[d + 1:]


def _repeat_interleave_reference(x, repeats=None, dim=None, output_size=None):
    if repeats is None:
        return np.repeat(np.arange(len(x)), x)
    return np.repeat(x, repeats, axis=dim) if np.ndim(x) or dim is None else np.repeat(np.reshape(x, 1), repeats)


def _repeat_interleave_samples(make, dtype):
    yield Sample((make((2, 3)), 2), note="flattened")
    yield Sample((make((2, 3), noncontiguous=True), 3, 1))
    yield Sample((make((3, 2)), make((3,), dtype=int64, low=0, high=3), 0), note="tensor repeats, zeros too")
    yield Sample((make((2, 4)), make((4,), dtype=int64, low=1, high=3), -1), {"output_size": None},
                 note="tensor repeats along the last dim")
    if dtype.kind == "int":
        yield Sample((make((4,), low=0, high=3),), note="repeats only: the positions repeated")


defop("repeat_interleave(Tensor input, Any repeats=None, dim? dim=None, *, int? output_size=None)", "view",
      kind="composite", promotion=rules.passthrough, normalize=_repeat_interleave_normalize,
      meta=_repeat_interleave_meta, composite=_repeat_interleave, reference=_repeat_interleave_reference,
      samples=_repeat_interleave_samples,
      doc="each element (or slice along dim) repeated repeats times, or repeats[i] times for a tensor of counts; "
          "repeat_interleave(repeats) repeats the positions 0, 1, ...")
