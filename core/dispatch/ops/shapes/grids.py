"""Grids and arrangements: meshgrid, broadcast_tensors/broadcast_to/broadcast_shapes, cartesian_prod,
combinations, block_diag, vander and tril_indices/triu_indices. Composites of views, masks and cumprod."""
from __future__ import annotations

import itertools

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.errors import ArgumentError, DtypeError, ShapeError, describe
from ...schema.meta import broadcast_shapes as _broadcast, shape
from ...schema.promotion import result_type_of
from ...schema import Sample, defop
from ..namespace import F


def _one_dtype(op_name: str, tensors) -> None:
    """meshgrid and cartesian_prod take tensors of one dtype, as in PyTorch."""
    dtypes = {t.dtype for t in tensors if hasattr(t, "_data")}
    if len(dtypes) > 1:
        raise DtypeError(f"{op_name}: expects all tensors to have the same dtype, got "
                         f"{', '.join(describe(t) for t in tensors)}")


def _list_of_tensors(op_name: str, tensors) -> list:
    """A call's tensors given as varargs or as one list (``meshgrid(a, b)`` or ``meshgrid([a, b])``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return list(tensors)


# -- meshgrid --------------------------------------------------------------------------------------------

def _grid_position(k: int, count: int, indexing: str) -> int:
    """Which output dim input k spans: 'xy' swaps the first two."""
    if indexing == "xy" and count >= 2 and k < 2:
        return 1 - k
    return k


def _meshgrid_normalize(op, args) -> None:
    tensors, indexing = args["tensors"], args["indexing"]
    if not tensors:
        raise ArgumentError("meshgrid: expects a non-empty list of tensors")
    if indexing not in (None, "ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if len(shape(t)) > 1:
            raise ShapeError(f"meshgrid: expects 0D or 1D tensors, got {describe(t)}")
    _one_dtype("meshgrid", tensors)


def _meshgrid_meta(tensors, indexing=None):
    sizes = [shape(t)[0] if shape(t) else 1 for t in tensors]
    grid = [0] * len(sizes)
    for k, n in enumerate(sizes):
        grid[_grid_position(k, len(sizes), indexing or "ij")] = n
    return (tuple(grid),) * len(tensors)


def _meshgrid(tensors, indexing=None):
    count = len(tensors)
    grid = _meshgrid_meta(tensors, indexing)[0]
    out = []
    for k, t in enumerate(tensors):
        at = _grid_position(k, count, indexing or "ij")
        line = F.reshape(t, tuple(-1 if d == at else 1 for d in range(count)))
        out.append(F.expand(line, grid))
    return tuple(out)


def _meshgrid_samples(make, dtype):
    yield Sample(([make((3,)), make((2,))],))
    yield Sample(([make((2,)), make(()), make((4,), noncontiguous=True)], ), {"indexing": "xy"}, note="xy")
    yield Sample(([make((0,)), make((3,))],), {"indexing": "ij"}, note="empty")


defop("meshgrid(Tensor[] tensors, *, str? indexing=None)", "view", kind="composite", promotion=rules.passthrough,
      meta=_meshgrid_meta, normalize=_meshgrid_normalize, composite=_meshgrid, samples=_meshgrid_samples,
      reference=lambda tensors, indexing=None: tuple(np.meshgrid(*tensors, indexing=indexing or "ij")),
      outputs=("*",), method=False, doc="coordinate grids spanned by 1-D tensors, as views ('ij': matrix indexing)")


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """torch.meshgrid: tensors given as arguments or as one list."""
    return F.meshgrid(_list_of_tensors("meshgrid", tensors), indexing=indexing)


# -- broadcasting ------------------------------------------------------------------------------------------

def _broadcast_tensors_meta(tensors):
    out = _broadcast("broadcast_tensors", *(shape(t) for t in tensors))
    return (out,) * len(tensors)


def _broadcast_tensors(tensors):
    target = _broadcast("broadcast_tensors", *(tuple(t.shape) for t in tensors))
    return tuple(F.expand(t, target) for t in tensors)


def _broadcast_tensors_samples(make, dtype):
    yield Sample(([make((2, 1)), make((3,)), make(())],))
    yield Sample(([make((2, 3), noncontiguous=True)],), note="one tensor")


defop("broadcast_tensors(Tensor[] tensors)", "view", kind="composite", promotion=rules.passthrough,
      meta=_broadcast_tensors_meta, composite=_broadcast_tensors, samples=_broadcast_tensors_samples,
      reference=lambda tensors: tuple(np.broadcast_arrays(*tensors)), outputs=("*",), method=False,
      doc="the tensors expanded to their common broadcast shape, as views")


def broadcast_tensors(*tensors) -> tuple:
    """torch.broadcast_tensors(*tensors)."""
    return F.broadcast_tensors(_list_of_tensors("broadcast_tensors", tensors))


def _broadcast_to_meta(x, size):
    """size with each -1 replaced by input's size there, once checked that input broadcasts to it."""
    lead = len(size) - len(shape(x))
    if lead < 0 or any(n == -1 for n in size[:lead]):
        raise ShapeError(f"broadcast_to: the input of shape {shape(x)} cannot be broadcast to {tuple(size)} (-1 "
                         f"keeps an existing size only)")
    target = tuple(shape(x)[i - lead] if n == -1 else n for i, n in enumerate(size))
    if _broadcast("broadcast_to", shape(x), target) != target:
        raise ShapeError(f"broadcast_to: the input of shape {shape(x)} cannot be broadcast to {tuple(size)}")
    return target


def _broadcast_to_samples(make, dtype):
    yield Sample((make((3, 1)), (2, 3, 4)))
    yield Sample((make((3,), noncontiguous=True), (2, -1)), note="-1 keeps a size")
    yield Sample((make(()), (0, 2)), note="to an empty shape")


defop("broadcast_to(Tensor input, int[] shape)", "view", kind="composite", promotion=rules.passthrough,
      torch_keywords={"size": "shape"},
      meta=_broadcast_to_meta, composite=lambda x, size: F.expand(x, size), samples=_broadcast_to_samples,
      reference=lambda x, size: np.broadcast_to(x, _broadcast_to_meta(_Shaped(x.shape), size)), view=True,
      doc="input expanded to size by broadcasting, as a view")


class _Shaped:
    """An array's shape as the meta functions read operands (for the reference)."""

    def __init__(self, dims: tuple) -> None:
        self._data = np.empty(dims, dtype=np.int8)


def broadcast_shapes(*shapes) -> tuple:
    """torch.broadcast_shapes: the shape that tensors of these shapes broadcast to (an int n stands for (n,))."""
    as_tuples = []
    for s in shapes:
        if isinstance(s, int):
            as_tuples.append((s,))
        elif isinstance(s, (list, tuple)) and all(isinstance(n, int) for n in s):
            as_tuples.append(tuple(s))
        else:
            raise TypeError(f"broadcast_shapes: expects shapes (tuples or lists of ints, or ints), got {s!r}")
        if any(n < 0 for n in as_tuples[-1]):
            raise ArgumentError(f"broadcast_shapes: trying to create a tensor with negative dimension: {s!r}")
    return _broadcast("broadcast_shapes", *as_tuples)


# -- cartesian_prod, combinations --------------------------------------------------------------------------

def _vectors(op_name: str, tensors) -> None:
    for t in tensors:
        if len(shape(t)) != 1:
            raise ShapeError(f"{op_name}: expects 1D tensors, got {describe(t)}")


def _cartesian_prod_normalize(op, args) -> None:
    tensors = args["tensors"]
    if not tensors:
        raise ArgumentError("cartesian_prod: expects a non-empty list of tensors")
    _vectors("cartesian_prod", tensors)
    _one_dtype("cartesian_prod", tensors)


def _cartesian_prod_meta(tensors):
    count = 1
    for t in tensors:
        count *= shape(t)[0]
    return (count,) if len(tensors) == 1 else (count, len(tensors))


def _cartesian_prod(tensors):
    if len(tensors) == 1:
        return F.clone(tensors[0])
    return F.stack([F.reshape(g, (-1,)) for g in _meshgrid(tensors, "ij")], 1)


def _cartesian_prod_reference(tensors):
    rows = list(itertools.product(*tensors))
    out = np.array(rows, dtype=tensors[0].dtype).reshape(len(rows), len(tensors))
    return out[:, 0] if len(tensors) == 1 else out


def _cartesian_prod_samples(make, dtype):
    yield Sample(([make((3,)), make((2,))],))
    yield Sample(([make((2,)), make((2,), noncontiguous=True), make((3,))],), note="three")
    yield Sample(([make((4,))],), note="one")


defop("cartesian_prod(Tensor[] tensors)", "indexing", kind="composite", promotion=rules.passthrough,
      meta=_cartesian_prod_meta, normalize=_cartesian_prod_normalize, composite=_cartesian_prod,
      reference=_cartesian_prod_reference, samples=_cartesian_prod_samples, method=False,
      doc="every combination of one element from each 1-D tensor, one per row (itertools.product)")


def cartesian_prod(*tensors):
    """torch.cartesian_prod(*tensors)."""
    return F.cartesian_prod(_list_of_tensors("cartesian_prod", tensors))


def _combinations_normalize(op, args) -> None:
    _vectors("combinations", [args["input"]])
    if args["r"] < 0:
        raise ArgumentError(f"combinations: expects a non-negative r, got {args['r']}")


def _combination_count(n: int, r: int, with_replacement: bool) -> int:
    from math import comb
    return comb(n + r - 1, r) if with_replacement else comb(n, r)


def _combinations_meta(x, r=2, with_replacement=False):
    if r == 0:
        return (0,)
    return (_combination_count(shape(x)[0], r, with_replacement), r)


def _combinations(x, r=2, with_replacement=False):
    """Masked grids of indices, as PyTorch: the rows of the r-fold grid whose indices never decrease (with
    replacement) or always increase, in lexicographic order."""
    if r == 0:
        return F.zeros((0,), dtype=x.dtype, device=x.device)
    positions = F.arange(x.shape[0], device=x.device)
    index_grids = _meshgrid([positions] * r, "ij")
    keep = None
    for earlier, later in zip(index_grids, index_grids[1:]):
        ordered = F.le(earlier, later) if with_replacement else F.lt(earlier, later)
        keep = ordered if keep is None else F.logical_and(keep, ordered)
    value_grids = _meshgrid([x] * r, "ij")
    if keep is None:
        return F.reshape(value_grids[0], (-1, 1))
    return F.stack([F.masked_select(g, keep) for g in value_grids], 1)


def _combinations_reference(x, r=2, with_replacement=False):
    if r == 0:
        return np.zeros((0,), x.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(x.tolist(), r))
    return np.array(rows, dtype=x.dtype).reshape(len(rows), r)


def _combinations_samples(make, dtype):
    yield Sample((make((4,)),))
    yield Sample((make((3,), noncontiguous=True), 3, True), note="with replacement")
    yield Sample((make((2,)), 3), note="r beyond the length: none")
    yield Sample((make((3,)), 0), note="r = 0")


defop("combinations(Tensor input, int r=2, bool with_replacement=False)", "indexing", kind="composite",
      promotion=rules.passthrough, meta=_combinations_meta, normalize=_combinations_normalize,
      composite=_combinations, reference=_combinations_reference, samples=_combinations_samples, method=False,
      doc="the length-r combinations of a 1-D tensor's elements, one per row (itertools.combinations)")


# -- block_diag, vander -----------------------------------------------------------------------------------

def _block_shape(t) -> tuple:
    s = shape(t)
    if len(s) > 2:
        raise ShapeError(f"block_diag: input tensors must have 2 or fewer dimensions, got {describe(t)}")
    return (1, 1) if not s else (1, s[0]) if len(s) == 1 else s


def _block_diag_meta(tensors):
    blocks = [_block_shape(t) for t in tensors]
    return (sum(b[0] for b in blocks), sum(b[1] for b in blocks))


def _block_diag(tensors):
    dtype = result_type_of([t.dtype for t in tensors], [], [])
    width = _block_diag_meta(tensors)[1]
    rows, left = [], 0
    for t in tensors:
        block = F.reshape(t, _block_shape(t))
        block = block if block.dtype is dtype else F.to_dtype(block, dtype)
        height, cols = block.shape
        pieces = [F.zeros((height, left), dtype=dtype, device=t.device), block,
                  F.zeros((height, width - left - cols), dtype=dtype, device=t.device)]
        rows.append(F.cat(pieces, 1))
        left += cols
    return F.cat(rows, 0)


def _block_diag_reference(tensors):
    from scipy.linalg import block_diag
    return block_diag(*[np.reshape(t, _block_shape(_Shaped(np.shape(t)))) for t in tensors])


def _block_diag_samples(make, dtype):
    yield Sample(([make((2, 3)), make((1, 2))],))
    yield Sample(([make(()), make((3,), noncontiguous=True), make((2, 0))],), note="0-d, 1-D and empty blocks")


defop("block_diag(Tensor[] tensors)", "indexing", kind="composite", promotion=rules.same, meta=_block_diag_meta,
      composite=_block_diag, reference=_block_diag_reference, samples=_block_diag_samples, method=False,
      dtypes="all+complex", doc="the tensors (as matrices) along the diagonal of a matrix of zeros")


def block_diag(*tensors):
    """torch.block_diag(*tensors)."""
    return F.block_diag(_list_of_tensors("block_diag", tensors))


def _vander_normalize(op, args) -> None:
    x, n = args["x"], args["N"]
    if len(shape(x)) != 1:
        raise ShapeError(f"vander: x must be a one-dimensional tensor, got {describe(x)}")
    if n is not None and n < 0:
        raise ArgumentError(f"vander: N must be non-negative, got {n}")


def _vander_meta(x, N=None, increasing=False):
    return (shape(x)[0], shape(x)[0] if N is None else N)


def _vander(x, N=None, increasing=False):
    """Running products of [1, x, x, ...]: the powers 0 .. N-1 of each element (PyTorch's way)."""
    n = x.shape[0] if N is None else N
    dtype = x.dtype if x.dtype.is_inexact else int64  # integer powers accumulate in int64
    column = F.unsqueeze(x if x.dtype is dtype else F.to_dtype(x, dtype), 1)
    if n == 0:
        return F.zeros((x.shape[0], 0), dtype=dtype, device=x.device)
    ones = F.ones((x.shape[0], 1), dtype=dtype, device=x.device)
    powers = F.cumprod(F.cat([ones, F.expand(column, (x.shape[0], n - 1))], 1), 1)
    return powers if increasing else F.flip(powers, [1])


def _vander_reference(x, N=None, increasing=False):
    out_dtype = x.dtype if x.dtype.kind in "fc" else np.int64
    return np.vander(x.astype(out_dtype), N, increasing)


def _vander_samples(make, dtype):
    yield Sample((make((4,)),))
    yield Sample((make((3,), noncontiguous=True), 5, True), note="N=5, increasing")
    yield Sample((make((3,)), 0), note="N=0")


defop("vander(Tensor x, int? N=None, bool increasing=False)", "creation", kind="composite", promotion=rules.accumulate,
      meta=_vander_meta, normalize=_vander_normalize, composite=_vander, reference=_vander_reference,
      dtypes="all+complex", samples=_vander_samples, method=False,
      doc="the Vandermonde matrix: columns of powers of x (decreasing unless increasing)")


# -- tril_indices, triu_indices ------------------------------------------------------------------------------

def _clamped_sum(start: int, n: int, cap: int) -> int:
    """``sum(min(max(start + i, 0), cap) for i in range(n))`` in constant time, so that a triangle of 2**62 rows
    is counted (and refused as too large) at once instead of row by row."""
    if n <= 0:
        return 0
    end = start + n - 1
    low, high = max(start, 0), min(end, cap)
    middle = (low + high) * (high - low + 1) // 2 if low <= high else 0
    return middle + cap * max(0, end - max(cap, start - 1))


def _triangle_indices(name: str, keep_row):
    """Declare ``name``: the (2, count) coordinates of a row x col triangle, row by row."""

    def count(row, col, offset):
        if name == "tril_indices":  # row i keeps min(col, max(i + offset + 1, 0)) columns
            return _clamped_sum(offset + 1, row, col)
        return row * col - _clamped_sum(offset, row, col)  # row i drops its first min(max(i + offset, 0), col)

    def normalize(op, args):
        if args["row"] < 0 or args["col"] < 0:
            raise ArgumentError(f"{name}: row and col must be non-negative, got {args['row']} and {args['col']}")

    def meta(row, col, offset=0, dtype=None, device=None):
        return (2, count(row, col, offset))

    def composite(row, col, offset=0, dtype=None, device=None):
        if not count(row, col, offset):  # no mask of row x col: row may be astronomical
            return F.zeros((2, 0), dtype=dtype or int64, device=device)
        if name == "triu_indices":  # the rows from col - offset on are empty: a tall matrix has a short mask
            row = min(row, col - offset)
        mask = F.ones((row, col), dtype=int64, device=device)
        mask = F.tril(mask, offset) if name == "tril_indices" else F.triu(mask, offset)
        return F.to_dtype(F.clone(F.transpose(F.argwhere(mask), 0, 1)), dtype or int64)

    def reference(row, col, offset=0, dtype=None, device=None):
        rows = [(i, j) for i in range(row) for j in keep_row(i, col, offset)]
        return np.array(rows, dtype=np.int64).reshape(-1, 2).T

    def samples(make, dtype):
        yield Sample((3, 4), {"dtype": dtype})
        yield Sample((4, 3, -1), {"dtype": dtype}, note="below the diagonal")
        yield Sample((3, 3, 2), {"dtype": dtype}, note="above the diagonal")
        yield Sample((0, 3), {"dtype": dtype}, note="no rows")

    return dict(kind="composite", promotion=rules.integer_creation, dtypes="int", meta=meta,
                normalize=normalize, composite=composite, reference=reference, samples=samples, method=False)


defop("tril_indices(int row, int col, int offset=0, *, dtype? dtype=None, device? device=None)", "creation",
      **_triangle_indices("tril_indices", lambda i, col, offset: range(min(col, max(i + offset + 1, 0)))),
      doc="the coordinates of the lower triangle (from diagonal offset) of a row x col matrix, as a (2, N) tensor")
defop("triu_indices(int row, int col, int offset=0, *, dtype? dtype=None, device? device=None)", "creation",
      **_triangle_indices("triu_indices", lambda i, col, offset: range(min(max(i + offset, 0), col), col)),
      doc="the coordinates of the upper triangle (from diagonal offset) of a row x col matrix, as a (2, N) tensor")


FUNCTIONS = {"meshgrid": meshgrid, "broadcast_tensors": broadcast_tensors, "broadcast_shapes": broadcast_shapes,
             "cartesian_prod": cartesian_prod, "block_diag": block_diag}
