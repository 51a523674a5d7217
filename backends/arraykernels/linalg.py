"""Matrix products on the library's BLAS; dtypes without a fast BLAS path compute in float32."""
from __future__ import annotations

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    widen = lib.widen_for_matmul

    def _matmul(a, b):
        if a.dtype in widen:
            return xp.asarray(xp.matmul(a.astype(np.float32), b.astype(np.float32))).astype(a.dtype)
        return xp.asarray(xp.matmul(a, b))

    def _einsum(equation, operands):
        if operands[0].dtype in widen:
            low = operands[0].dtype
            wide = [o.astype(np.float32) for o in operands]
            return xp.asarray(xp.einsum(equation, *wide, optimize=True)).astype(low)
        return xp.asarray(xp.einsum(equation, *operands, optimize=len(operands) > 2))

    return {"matmul": _matmul, "einsum": _einsum}
