"""``ember.sparse.sum``, ``softmax`` and ``log_softmax``: reductions over the stored entries only.

Entries are grouped by their indices outside the reduced dims (a sort of their linear positions), and
reduced with ``index_add``; all in differentiable Ember ops. Softmax treats unstored entries as minus
infinity, as PyTorch's sparse softmax does: they get no probability and stay unstored.
"""
from __future__ import annotations

from ..dispatch.ops import F
from ..dispatch.schema.dtypes import as_dtype, int64
from ..dispatch.schema.errors import UnsupportedDtypeError
from ..memory_format import sparse_csr
from ..tensor import Tensor
from .conversion import coalesce, csr_to_coo, coo_to_csr, linear_index
from .tensor import SparseTensor, make


def _dims(function: str, dim, ndim: int) -> list[int]:
    dims = [dim] if isinstance(dim, int) else list(dim)
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"{function}: Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                             f"but got {d})")
        out.append(d % ndim)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{function}: dim {dim} appears more than once")
    return sorted(out)


def _coo(t: SparseTensor) -> SparseTensor:
    return coalesce(csr_to_coo(t) if t.layout is sparse_csr else t)


def groups(key: Tensor) -> tuple[Tensor, int]:
    """A group number per entry (equal keys, equal numbers) and the number of groups."""
    if key.shape[0] == 0:
        return key, 0
    ordered, order = F.sort(key, stable=True)
    starts = F.cat([key.new_ones(1, dtype=ordered.dtype) > 0, ordered[1:] != ordered[:-1]])
    numbers = F.cumsum(starts, 0) - 1
    ids = key.new_zeros(key.shape[0], dtype=int64).scatter(0, order, numbers)
    return ids, int(numbers[-1].item()) + 1


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 (PyTorch's name)
    """The sum over ``dim`` (all dims by default). Summing every sparse dim gives a dense tensor; otherwise
    the result is a coalesced COO tensor over the sparse dims that remain."""
    if not isinstance(input, SparseTensor):
        return input.sum() if dim is None else input.sum(dim, dtype=dtype)
    values = input._vals if dtype is None else input._vals.to(as_dtype(dtype))
    if dim is None:
        return values.sum()
    dims = _dims("sparse.sum", dim, input.ndim)
    sparse_dim = input.sparse_dim()
    dense_dims = [d - sparse_dim + 1 for d in dims if d >= sparse_dim]
    if dense_dims:
        values = values.sum(dense_dims)
    keep = [d for d in range(sparse_dim) if d not in dims]
    if not keep:
        return values.sum(0)
    coo = input if input.layout is not sparse_csr else csr_to_coo(input)
    shape = tuple(input.shape[d] for d in keep) + tuple(values.shape[1:])
    kept = make(coo.layout, shape, values, indices=coo._idx[keep].contiguous())
    return coalesce(kept)


def _softmax(function: str, input: SparseTensor, dim: int, dtype, log: bool) -> SparseTensor:
    if not isinstance(input, SparseTensor):
        raise TypeError(f"{function}: expected a sparse tensor, got {type(input).__name__}; use "
                        f"ember.{function.split('.')[-1]} for dense tensors")
    (dim,) = _dims(function, dim, input.ndim)
    t = _coo(input)
    values = t._vals if dtype is None else t._vals.to(as_dtype(dtype))
    if not values.dtype.is_floating_point:
        raise UnsupportedDtypeError(f'"{function.split(".")[-1]}" not implemented for {values.dtype.name} '
                                    f'(a sparse {tuple(input.shape)} tensor)')
    sparse_dim = t.sparse_dim()
    if dim >= sparse_dim:  # a dense dim: within each stored slice, an ordinary softmax
        d = dim - sparse_dim + 1
        out = F.log_softmax(values, d) if log else F.softmax(values, d)
    else:
        others = [d for d in range(sparse_dim) if d != dim]
        sizes = tuple(t.shape[d] for d in others)
        key = linear_index(t._idx[others], sizes) if others else t._idx[0].new_zeros(t._nnz())
        ids, count = groups(key)
        spread = ids.reshape((-1,) + (1,) * (values.ndim - 1)).expand(tuple(values.shape))
        top = values.new_full((count, *values.shape[1:]), float("-inf"))
        top = top.scatter_reduce(0, spread, values.detach(), "amax", include_self=True)
        shifted = values - top[ids]
        exp = shifted.exp()
        total = values.new_zeros((count, *values.shape[1:])).index_add(0, ids, exp)
        out = shifted - total.log()[ids] if log else exp / total[ids]
    result = make(t.layout, tuple(t.shape), out, indices=t._idx, coalesced=True)
    return coo_to_csr(result) if input.layout is sparse_csr else result


def softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Softmax along ``dim`` over the stored entries (unstored ones count as minus infinity)."""
    return _softmax("sparse.softmax", input, dim, dtype, log=False)


def log_softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Log-softmax along ``dim`` over the stored entries."""
    return _softmax("sparse.log_softmax", input, dim, dtype, log=True)
