"""The CUDA backend's sparse kernels: CSR @ dense through cupyx.scipy.sparse (cuSPARSE SpMM).

GPU-only and kept thin: the same CSR arrays the CPU hook hands SciPy go to cupyx's ``csr_matrix``, whose
product with a dense CuPy array is cuSPARSE's SpMM. cuSPARSE takes int32 indices, so the index arrays are
narrowed (an nnz or column count past int32 is refused by name, never wrapped).
"""
from __future__ import annotations

from ember.dispatch import BackendError, SparseKernels

_INT32_MAX = 2 ** 31 - 1


class CupySparseKernels(SparseKernels):
    def __init__(self, cupy) -> None:
        self._cupy = cupy

    def csr_matmul(self, crow, col, values, dense, rows: int):
        from cupyx.scipy import sparse
        columns = dense.shape[0]
        if values.shape[0] > _INT32_MAX or columns > _INT32_MAX or rows > _INT32_MAX:
            raise BackendError(f"cuda: sparse.mm with {values.shape[0]} stored entries and shape ({rows}, {columns}) "
                               f"exceeds cuSPARSE's int32 indices")
        int32 = self._cupy.int32
        matrix = sparse.csr_matrix((values, col.astype(int32), crow.astype(int32)), shape=(rows, columns))
        return self._cupy.ascontiguousarray(matrix @ dense)
