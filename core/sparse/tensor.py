"""``SparseTensor``: a COO or CSR tensor, stored as dense Ember tensors plus a size.

COO keeps ``indices`` (int64, ``(sparse_dim, nnz)``) and ``values`` (``(nnz, *dense_dims)``); CSR keeps
``crow_indices`` (``(rows + 1,)``), ``col_indices`` (``(nnz,)``) and ``values``; all on one device. The
class is an ``ember.Tensor`` subclass so that ``isinstance`` checks, modules and autograd take it, but it
holds no native array (``errors.NoDenseArray``): dense ops refuse it by name.

Autograd runs through the values: every sparse operation is written in differentiable Ember ops on the
components, so ``requires_grad``, ``grad_fn`` and ``is_leaf`` are the values' own, and ``grad`` is the
values' gradient laid out on this tensor's indices (PyTorch's sparse gradient of ``torch.sparse.mm``).
This module holds the class, its metadata and its constructor ``make``; operations are attached by
``methods.install``.
"""
from __future__ import annotations

from typing import Any

from ..dispatch.execution import links
from ..memory_format import layout as Layout, sparse_coo, sparse_csr
from ..tensor import Size, Tensor
from .errors import NoDenseArray

_new = object.__new__


class SparseTensor(Tensor):
    """A sparse tensor in the COO or CSR layout. Make one with ``ember.sparse_coo_tensor``,
    ``ember.sparse_csr_tensor``, ``Tensor.to_sparse()`` or ``Tensor.to_sparse_csr()``."""

    __slots__ = ("_layout", "_idx", "_crow", "_col", "_vals", "_coalesced", "_pattern")

    # -- layout facts ----------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def is_sparse(self) -> bool:
        """True for COO only, as in PyTorch (CSR answers ``is_sparse_csr``)."""
        return self._layout is sparse_coo

    @property
    def is_sparse_csr(self) -> bool:
        return self._layout is sparse_csr

    def sparse_dim(self) -> int:
        return self._idx.shape[0] if self._layout is sparse_coo else 2

    def dense_dim(self) -> int:
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def is_coalesced(self) -> bool:
        self._require(sparse_coo, "is_coalesced")
        return self._coalesced

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError(f"is_contiguous: a {self._layout.name} tensor has no strides")

    # -- components ------------------------------------------------------------------------------
    def _require(self, layout: Layout, function: str) -> None:
        if self._layout is not layout:
            raise RuntimeError(f"{function} expected {layout.name} layout but got {self._layout.name}")

    def _indices(self) -> Tensor:
        """The COO indices as stored, coalesced or not."""
        self._require(sparse_coo, "_indices")
        return self._idx

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        self._require(sparse_coo, "indices")
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self) -> Tensor:
        """The stored values (differentiable: gradients reach this tensor's values)."""
        if self._layout is sparse_coo and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def crow_indices(self) -> Tensor:
        self._require(sparse_csr, "crow_indices")
        return self._crow

    def col_indices(self) -> Tensor:
        self._require(sparse_csr, "col_indices")
        return self._col

    # -- autograd: the values' own state ---------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._vals.requires_grad_(value)

    @property
    def grad_fn(self) -> Any:
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        self._vals.grad_fn = value

    @property
    def is_leaf(self) -> bool:
        return self._vals.grad_fn is None

    @property
    def grad(self) -> "SparseTensor | None":
        """The gradient at this tensor's positions, a sparse tensor of the same layout: the values' gradient
        on these indices. An uncoalesced COO tensor's gradient is coalesced (PyTorch's), each position
        holding its entries' gradient (equal for a loss that reads the tensor's dense value: their mean)."""
        g = self._vals.grad
        if g is None:
            return None
        if self._layout is sparse_coo and not self._coalesced and self._vals.shape[0] > 1:
            from .conversion import coalesce
            summed, counts = coalesce(self._with_values(g)), coalesce(self._with_values(g.new_ones(g.shape)))
            count = counts._vals.reshape((-1,) + (1,) * (g.ndim - 1))
            return summed._with_values(summed._vals / count)
        return self._with_values(g)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
            return
        if not isinstance(value, SparseTensor) or value._layout is not self._layout or value.shape != self.shape:
            raise RuntimeError(f"assigned grad must be a {self._layout.name} tensor of shape {tuple(self.shape)}")
        self._vals.grad = value._vals

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError(f"only tensors of floating point dtype can require gradients, got {self._dtype.name}")
        self._vals.requires_grad_(requires_grad)
        return self

    def detach(self) -> "SparseTensor":
        return self._with_values(self._vals.detach())

    def detach_(self) -> "SparseTensor":
        self._vals = self._vals.detach()
        return self

    @property
    def data(self) -> "SparseTensor":
        return self.detach()

    # -- construction ----------------------------------------------------------------------------
    def _with_values(self, values: Tensor) -> "SparseTensor":
        """This tensor's structure with other values (same nnz): the result of element-wise ops."""
        out = make(self._layout, tuple(self.shape), values, indices=self._idx, crow=self._crow,
                   col=self._col, coalesced=self._coalesced)
        out._pattern = self._pattern  # the structure, and so its cached CSR pattern, is shared
        return out


def make(layout: Layout, size: tuple[int, ...], values: Tensor, *, indices: Tensor | None = None,
         crow: Tensor | None = None, col: Tensor | None = None, coalesced: bool = False) -> SparseTensor:
    """A sparse tensor around already-checked components (no validation: ``construction`` validates)."""
    t = _new(SparseTensor)
    t._data = NoDenseArray(size, layout.name)
    t._dtype = values._dtype
    t._device = values._device
    t._version = [0]
    t._base = None
    t._output_nr = 0
    t._accumulator = None
    t._inference = links.recorder.state.inference
    t._layout = layout
    t._idx = indices
    t._crow, t._col = crow, col
    t._vals = values
    t._coalesced = coalesced
    t._pattern = None
    return t


__all__ = ["SparseTensor", "make", "Size"]
