"""The OpenCL backend's sparse kernels (``Backend.sparse_kernels``): CSR @ dense in OpenCL C."""
from __future__ import annotations

from ember.dispatch import SparseKernels

from .kernels.sparse import csr_matmul


class OpenCLSparseKernels(SparseKernels):
    def csr_matmul(self, crow, col, values, dense, rows: int):
        return csr_matmul(crow, col, values, dense, rows)

    def supports(self, dtype_name: str) -> bool:
        """Floating dtypes the device computes in (float16 arrives widened to float32 by ``ember.sparse``)."""
        return dtype_name in ("float32", "float64")
