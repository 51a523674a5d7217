"""``ember.sparse_coo_tensor`` and ``ember.sparse_csr_tensor``: components checked, then wrapped.

Shape and dtype checks always run and raise PyTorch's errors (RuntimeError, with its wording where it has
one). Index *values* (bounds, CSR row pointers, sortedness) are checked where ``check_invariants`` asks,
by default always (``invariants``).
"""
from __future__ import annotations

from typing import Sequence

from .. import creation
from ..dispatch.ops import F
from ..dispatch.schema.binding import int_argument
from ..dispatch.schema.dtypes import int32, int64
from ..memory_format import sparse_coo, sparse_csr
from ..tensor import Tensor
from . import invariants
from .tensor import SparseTensor, make


def _as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, SparseTensor):
        raise TypeError("sparse constructors take dense component tensors, got a sparse tensor")
    return creation.as_tensor(data, dtype=dtype, device=device)


def _index_tensor(data, device, function: str, name: str) -> Tensor:
    """Indices as int64 (PyTorch converts integer and floating indices alike)."""
    t = _as_tensor(data, device=device)
    return t if t.dtype is int64 else t.to(int64)


def _leaf_or_not(values: Tensor, requires_grad: bool) -> Tensor:
    """``requires_grad=True`` makes the sparse tensor a leaf of its own (its values detached from any graph);
    otherwise the values keep their history, so gradients reach the tensor they came from."""
    if not requires_grad:
        return values
    if not values.dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    return values.detach().requires_grad_(True)


def _size(size, function: str) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, int):
        size = (size,)
    if not isinstance(size, Sequence) or not all(isinstance(s, int) and not isinstance(s, bool) for s in size):
        raise TypeError(f"{function}(): size must be a sequence of ints, got {size!r}")
    return tuple(size)


def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A COO tensor: ``values[k]`` at position ``indices[:, k]``; duplicates sum. ``size`` defaults to the
    smallest size holding every index. ``sparse_coo_tensor(size)`` alone is an empty one of that size."""
    given_size = size if indices is None else indices if size is None and isinstance(indices, (tuple, list)) else None
    if values is None and given_size is not None:  # PyTorch's size-only overload: an empty tensor of that size
        size = tuple(int_argument("sparse_coo_tensor", "size", s) for s in given_size)
        indices = F.zeros((len(size), 0), dtype=int64, device=device)
        values = F.zeros((0,), dtype=dtype, device=device)
    elif values is None:
        raise TypeError("sparse_coo_tensor() missing required argument 'values'")
    values = _as_tensor(values, dtype=dtype, device=device)
    indices = _index_tensor(indices, values.device, "sparse_coo_tensor", "indices")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sparse_dim, nnz = indices.shape
    if values.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz, *dense_dims), got a 0-d tensor")
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {values.shape[0]}")
    dense_shape = tuple(values.shape[1:])
    size = _size(size, "sparse_coo_tensor")
    check = invariants.wanted(check_invariants)
    if size is None:
        tops = indices.amax(1).tolist() if nnz else [-1] * sparse_dim
        size = tuple(max(t + 1, 0) for t in tops) + dense_shape
        check = check and nnz > 0  # the inferred size holds every index; negative ones still need a look
    if len(size) != sparse_dim + len(dense_shape):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}")
    if tuple(size[sparse_dim:]) != dense_shape:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, got "
                           f"{list(values.shape)}")
    if check and nnz:
        _check_coo_bounds(indices, size)
    coalesced = bool(is_coalesced) or nnz <= 1
    if is_coalesced and check and nnz > 1:
        _check_coalesced(indices, size)
    return make(sparse_coo, size, _leaf_or_not(values, requires_grad), indices=indices, coalesced=coalesced)


def _check_coo_bounds(indices: Tensor, size: tuple[int, ...]) -> None:
    lows, highs = indices.amin(1).tolist(), indices.amax(1).tolist()
    for dim, (low, high) in enumerate(zip(lows, highs)):
        if low < 0:
            raise RuntimeError(f"found negative index {low} for dim {dim}")
        if high >= size[dim]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {dim}, size is {size[dim]} but found "
                               f"index {high}")


def _check_coalesced(indices: Tensor, size: tuple[int, ...]) -> None:
    from .conversion import linear_index
    flat = linear_index(indices, size[:indices.shape[0]])
    if not bool((flat[1:] > flat[:-1]).all()):
        raise RuntimeError("is_coalesced=True, but the indices are not sorted and unique")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A 2-D CSR tensor (values may have dense dims): row ``i``'s entries are
    ``values[crow[i]:crow[i+1]]`` in the columns ``col_indices[crow[i]:crow[i+1]]``."""
    values = _as_tensor(values, dtype=dtype, device=device)
    crow = _as_tensor(crow_indices, device=values.device)
    col = _as_tensor(col_indices, device=values.device)
    for name, t in (("crow_indices", crow), ("col_indices", col)):
        if t.dtype not in (int32, int64):
            raise RuntimeError(f"{name} must be an int32 or int64 tensor, got {t.dtype.name}")
    if crow.dtype is not col.dtype:
        raise RuntimeError(f"crow_indices and col_indices must have the same dtype, but got {crow.dtype.name} "
                           f"and {col.dtype.name}, respectively")
    if crow.ndim != 1 or col.ndim != 1:
        raise RuntimeError(f"crow_indices and col_indices must be 1-D (Ember has no batched CSR), got shapes "
                           f"{list(crow.shape)} and {list(col.shape)}")
    if values.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz, *dense_dims), got a 0-d tensor")
    nnz, dense_shape = values.shape[0], tuple(values.shape[1:])
    if col.shape[0] != nnz:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={nnz}) as defined by values.shape[0], "
                           f"but got {col.shape[0]}")
    size = _size(size, "sparse_csr_tensor")
    if size is None:
        columns = int(col.amax().item()) + 1 if nnz else 0
        size = (crow.shape[0] - 1, columns) + dense_shape
    if len(size) != 2 + len(dense_shape):
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities "
                           f"(=0 + 2 + {len(dense_shape)}) but got {len(size)}")
    if tuple(size[2:]) != dense_shape:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[2:]]}, got {list(values.shape)}")
    if crow.shape[0] != size[0] + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 (={size[0] + 1}), "
                           f"but got {crow.shape[0]}")
    if invariants.wanted(check_invariants):
        _check_csr(crow, col, nnz, size[1])
    return make(sparse_csr, size, _leaf_or_not(values, requires_grad), crow=crow, col=col)


def _check_csr(crow: Tensor, col: Tensor, nnz: int, columns: int) -> None:
    ends = crow[::max(crow.shape[0] - 1, 1)].tolist()
    if ends[0] != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if ends[-1] != nnz:
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    if crow.shape[0] > 1 and not bool((crow[1:] >= crow[:-1]).all()):
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.")
    if nnz == 0:
        return
    if int(col.amin().item()) < 0 or int(col.amax().item()) >= columns:
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    if nnz > 1:
        from .conversion import csr_rows
        rows = csr_rows(crow.to(int64), nnz)
        same_row = rows[1:] == rows[:-1]
        if bool((same_row & (col[1:] <= col[:-1])).any()):
            raise RuntimeError("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, "
                               "..., nrows are sorted and distinct along the last dimension values` is not "
                               "satisfied.")
