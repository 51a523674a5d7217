"""The CSR pattern of a 2-D sparse tensor: what its products need, computed once per index structure.

A graph network multiplies the same adjacency matrix every step, so the row pointers, the order that puts
COO entries into CSR order, and the transposed pattern (for the gradient of the dense operand, A^T @ grad)
are cached on the tensor (``SparseTensor._pattern``) and shared by tensors with the same indices.
"""
from __future__ import annotations

from ..dispatch.ops import F
from ..dispatch.schema.dtypes import int64
from ..memory_format import sparse_coo
from ..tensor import Tensor
from .conversion import csr_rows, linear_index
from .tensor import SparseTensor


class Pattern:
    """Row pointers ``crow``, column and row of each entry (``col``, ``row``) in CSR order; ``order`` takes
    the tensor's stored values into that order (None: they are in it already)."""

    __slots__ = ("shape", "crow", "col", "row", "order", "_transposed")

    def __init__(self, shape: tuple[int, int], crow: Tensor, col: Tensor, row: Tensor, order: Tensor | None):
        self.shape, self.crow, self.col, self.row, self.order = shape, crow, col, row, order
        self._transposed: tuple[Pattern, Tensor] | None = None

    def ordered(self, values: Tensor) -> Tensor:
        """The stored values in CSR order (a differentiable gather where the order differs)."""
        return values if self.order is None else values[self.order]

    def transposed(self) -> tuple["Pattern", Tensor]:
        """The pattern of the transpose, and the order taking this pattern's values into it."""
        if self._transposed is None:
            rows, cols = self.shape
            _, order = F.sort(self.col, stable=True)  # by column; within a column, rows stay ascending
            counts = F.bincount(self.col, minlength=cols) if self.col.shape[0] else self.col.new_zeros(cols)
            crow = F.cat([counts.new_zeros(1), F.cumsum(counts, 0)])
            self._transposed = (Pattern((cols, rows), crow, self.row[order], self.col[order], None), order)
        return self._transposed


def pattern_of(t: SparseTensor) -> Pattern:
    """``t``'s CSR pattern, cached on ``t``."""
    if t._pattern is None:
        t._pattern = _build(t)
    return t._pattern


def _build(t: SparseTensor) -> Pattern:
    rows, cols = t.shape[0], t.shape[1]
    if t._layout is not sparse_coo:
        crow = t._crow.to(int64)
        return Pattern((rows, cols), crow, t._col.to(int64), csr_rows(crow, t._nnz()), None)
    row, col = t._idx[0], t._idx[1]
    order = None
    if not t._coalesced and t._nnz() > 1:
        flat = linear_index(t._idx, (rows, cols))
        if not bool((flat[1:] >= flat[:-1]).all()):
            _, order = F.sort(row, stable=True)  # duplicates may stay: the product adds them up
            row, col = row[order], col[order]
    counts = F.bincount(row, minlength=rows) if t._nnz() else row.new_zeros(rows)
    crow = F.cat([counts.new_zeros(1), F.cumsum(counts, 0)])
    return Pattern((rows, cols), crow, col.contiguous(), row.contiguous(), order)
