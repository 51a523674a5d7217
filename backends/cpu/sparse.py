"""The CPU backend's sparse kernels: CSR @ dense through SciPy's sparse matrices (C++ loops)."""
from __future__ import annotations

import numpy as np

from ember.dispatch import SparseKernels


class ScipySparseKernels(SparseKernels):
    def csr_matmul(self, crow, col, values, dense, rows: int):
        from scipy import sparse
        matrix = sparse.csr_matrix((values, col, crow), shape=(rows, dense.shape[0]), copy=False)
        return np.ascontiguousarray(matrix @ dense, dtype=values.dtype)

    def supports(self, dtype_name: str) -> bool:
        """Every dtype but the halves (SciPy has no float16 sparse loops; core widens those to float32)."""
        return dtype_name not in ("float16", "bfloat16")
