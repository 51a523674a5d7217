"""The contract behind ``Backend.sparse_kernels()``: the sparse products a backend computes natively.

Sparse tensors are dense component arrays (``ember.sparse``), so every sparse operation but the product
is written in ordinary ops. The product of a CSR matrix and a dense one is the hot loop of graph networks
and has no fast composition, so it is a hook: a backend returns an object with these methods, or None (the
default), and then ``ember.sparse`` computes the product on the CPU backend's hook (SciPy), copying
the operands to the host and the result back.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class SparseKernels(ABC):
    """Native sparse products. Arguments arrive checked: one device, one floating or integer dtype for
    ``values`` and ``dense``, int64 index arrays, C-contiguous operands."""

    @abstractmethod
    def csr_matmul(self, crow: Any, col: Any, values: Any, dense: Any, rows: int) -> Any:
        """The dense ``(rows, k)`` product of the CSR matrix (``crow`` of length ``rows + 1``, ``col`` and
        ``values`` of length nnz; duplicate columns in a row add up) with ``dense`` ``(columns, k)``, in
        ``values``' dtype, as a fresh native array."""

    def supports(self, dtype_name: str) -> bool:
        """Whether ``csr_matmul`` takes this dtype (by Ember name); others run on the CPU fallback."""
        return dtype_name in ("float32", "float64")
