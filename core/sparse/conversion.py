"""Layout conversions: dense <-> COO <-> CSR, ``coalesce`` and the 2-D transpose.

All written in Ember ops on the components, so they run on any device and gradients reach the values
(``index_add`` and gathers are differentiable).
"""
from __future__ import annotations

import math

from .. import creation
from ..dispatch.ops import F
from ..dispatch.schema.dtypes import bool_, int64
from ..memory_format import sparse_coo, sparse_csr
from ..tensor import Tensor
from .tensor import SparseTensor, make
from ..dispatch.schema.binding import int_argument


def _strides(sizes: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= s
    return strides[::-1]


def linear_index(indices: Tensor, sizes: tuple[int, ...]) -> Tensor:
    """Each column of ``indices`` (sparse_dim, nnz) as its row-major position in ``sizes``."""
    if indices.shape[0] == 1:
        return indices[0]
    strides = creation.tensor(_strides(tuple(sizes)), dtype=int64, device=indices.device)
    return (indices * strides.unsqueeze(1)).sum(0)


def unravel(flat: Tensor, sizes: tuple[int, ...]) -> Tensor:
    """The inverse of ``linear_index``: positions back to a (len(sizes), n) index tensor."""
    rows = [(flat // stride) % size for stride, size in zip(_strides(tuple(sizes)), sizes)]
    return F.stack(rows) if rows else flat.new_zeros((0, flat.shape[0]))


def csr_rows(crow: Tensor, nnz: int) -> Tensor:
    """The row of each stored entry of a CSR tensor, from its row pointers."""
    counts = crow[1:] - crow[:-1]
    return F.repeat_interleave(F.arange(0, crow.shape[0] - 1, 1, device=crow.device), counts, output_size=nnz)


def coalesce(t: SparseTensor) -> SparseTensor:
    """A COO tensor with sorted, unique indices: duplicates summed (differentiably) into one entry."""
    t._require(sparse_coo, "coalesce")
    if t._coalesced:
        return t
    if t._nnz() <= 1:
        return make(sparse_coo, tuple(t.shape), t._vals, indices=t._idx, coalesced=True)
    sizes = tuple(t.shape[:t.sparse_dim()])
    flat = linear_index(t._idx, sizes)
    ordered, order = F.sort(flat, stable=True)
    starts = F.cat([flat.new_ones(1, dtype=bool_), ordered[1:] != ordered[:-1]])
    unique, inverse = ordered[starts], F.cumsum(starts, 0) - 1
    values = t._vals[order]
    summed = values.new_zeros((unique.shape[0], *values.shape[1:])).index_add(0, inverse, values)
    return make(sparse_coo, tuple(t.shape), summed, indices=unravel(unique, sizes), coalesced=True)


def coo_indices(t: SparseTensor) -> Tensor:
    """The (sparse_dim, nnz) int64 indices of a COO or CSR tensor, in storage order."""
    if t._layout is sparse_coo:
        return t._idx
    rows = csr_rows(t._crow.to(int64), t._nnz())
    return F.stack([rows, t._col.to(int64)])


def to_dense(t: Tensor, dtype=None, *, masked_grad: bool = True) -> Tensor:
    """The dense tensor: every stored value added at its position (duplicates sum)."""
    if not isinstance(t, SparseTensor):
        return t if dtype is None else t.to(dtype)
    sparse_dim = t.sparse_dim()
    sizes = tuple(t.shape[:sparse_dim])
    values = t._vals if dtype is None else t._vals.to(dtype)
    flat = values.new_zeros((math.prod(sizes), *values.shape[1:]))
    if t._nnz():
        flat = flat.index_add(0, linear_index(coo_indices(t), sizes), values)
    return flat.reshape(tuple(t.shape))


def dense_to_coo(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """A coalesced COO tensor of ``x``'s nonzero entries; the last ``ndim - sparse_dim`` dims stay dense
    (an entry is stored where any of its dense slice is nonzero)."""
    sparse_dim = x.ndim if sparse_dim is None else int_argument("to_sparse", "sparse_dim", sparse_dim)
    if not 0 < sparse_dim <= x.ndim if x.ndim else sparse_dim != 0:
        raise RuntimeError(f"to_sparse: sparse_dim must be in [1, {x.ndim}] for a {x.ndim}-D tensor, got {sparse_dim}")
    if x.ndim == 0:
        return make(sparse_coo, (), x.reshape(1), indices=x.new_zeros((0, 1), dtype=int64), coalesced=True)
    present = x != 0
    if sparse_dim < x.ndim:
        present = present.any(tuple(range(sparse_dim, x.ndim)))
    indices = F.nonzero(present).t()
    values = x[tuple(indices)] if indices.shape[1] else x.new_zeros((0, *x.shape[sparse_dim:]))
    return make(sparse_coo, tuple(x.shape), values, indices=indices.contiguous(), coalesced=True)


def coo_to_csr(t: SparseTensor) -> SparseTensor:
    """The CSR form of a COO tensor with two sparse dims (coalesced first)."""
    if t.sparse_dim() != 2:
        raise RuntimeError(f"to_sparse_csr: Ember's CSR tensors have two sparse dims (no batched CSR); this COO "
                           f"tensor has {t.sparse_dim()} (shape {tuple(t.shape)})")
    t = coalesce(t)
    rows = t._idx[0]
    counts = F.bincount(rows, minlength=t.shape[0]) if t._nnz() else rows.new_zeros(t.shape[0])
    crow = F.cat([counts.new_zeros(1), F.cumsum(counts, 0)])
    return make(sparse_csr, tuple(t.shape), t._vals, crow=crow, col=t._idx[1].contiguous())


def csr_to_coo(t: SparseTensor) -> SparseTensor:
    """The COO form of a CSR tensor (coalesced: CSR entries are sorted by row, then column)."""
    return make(sparse_coo, tuple(t.shape), t._vals, indices=coo_indices(t), coalesced=True)


def to_sparse(x: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim: int | None = None) -> SparseTensor:
    """``Tensor.to_sparse``: COO by default (``sparse_dim`` sparse dims, the rest dense), or ``layout``."""
    if blocksize is not None:
        raise RuntimeError("to_sparse: blocksize is for the BSR and BSC layouts, which Ember does not have")
    if layout is sparse_csr:
        return to_sparse_csr(x, dense_dim)
    if layout not in (None, sparse_coo):
        raise RuntimeError(f"to_sparse: layout {layout!r} is not supported; Ember has sparse_coo and sparse_csr")
    if isinstance(x, SparseTensor):
        if sparse_dim is not None and sparse_dim != x.sparse_dim():
            raise RuntimeError(f"to_sparse: sparse_dim {sparse_dim} differs from the tensor's {x.sparse_dim()}; "
                               f"convert through to_dense()")
        return x if x._layout is sparse_coo else csr_to_coo(x)
    if dense_dim is not None:
        sparse_dim = x.ndim - dense_dim
    return dense_to_coo(x, sparse_dim)


def to_sparse_coo(x: Tensor) -> SparseTensor:
    return to_sparse(x)


def to_sparse_csr(x: Tensor, dense_dim: int | None = None) -> SparseTensor:
    """``Tensor.to_sparse_csr``: the CSR form of a 2-D tensor (plus ``dense_dim`` dense dims)."""
    if isinstance(x, SparseTensor):
        return x if x._layout is sparse_csr else coo_to_csr(x)
    if x.ndim < 2:
        raise RuntimeError(f"to_sparse_csr: expected a tensor of at least 2 dims, got {x.ndim}")
    dense_dim = 0 if dense_dim is None else int_argument("to_sparse_csr", "dense_dim", dense_dim)
    return coo_to_csr(dense_to_coo(x, x.ndim - dense_dim))


def transpose(t: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    """Swap two sparse dims. A CSR tensor transposes through COO and comes back as CSR (PyTorch's
    transpose of CSR is CSC, a layout Ember does not have)."""
    ndim = t.ndim
    d0, d1 = (d + ndim if d < 0 else d for d in (dim0, dim1))
    if not (0 <= d0 < ndim and 0 <= d1 < ndim):
        raise IndexError(f"transpose: Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                         f"but got {dim0} and {dim1})")
    if d0 == d1:
        return t
    if max(d0, d1) >= t.sparse_dim():
        raise RuntimeError(f"transpose: dims {dim0} and {dim1} must both be sparse dims "
                           f"(this tensor has {t.sparse_dim()})")
    coo = t if t._layout is sparse_coo else csr_to_coo(t)
    order = list(range(coo.sparse_dim()))
    order[d0], order[d1] = order[d1], order[d0]
    shape = list(t.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    out = make(sparse_coo, tuple(shape), coo._vals, indices=coo._idx[order], coalesced=coo._nnz() <= 1)
    return coo_to_csr(out) if t._layout is sparse_csr else out
