"""Matrix products on NumPy's BLAS; half precision computes in float32."""
from __future__ import annotations

import numpy as np

from ..dtypes import LOW_PRECISION


def _matmul(a, b):
    if a.dtype in LOW_PRECISION:
        return np.asarray(np.matmul(a.astype(np.float32), b.astype(np.float32))).astype(a.dtype)
    return np.asarray(np.matmul(a, b))


def _einsum(equation, operands):
    if operands[0].dtype in LOW_PRECISION:
        low = operands[0].dtype
        return np.asarray(np.einsum(equation, *[o.astype(np.float32) for o in operands], optimize=True)).astype(low)
    return np.asarray(np.einsum(equation, *operands, optimize=len(operands) > 2))


KERNELS = {"matmul": _matmul, "einsum": _einsum}
