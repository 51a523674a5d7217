"""LAPACK through SciPy for decompositions (ops/linalg/decompositions.py) on the CPU: getrf and trtrs, the
symmetric-indefinite sytrf/sytrs (LDL^T; hetrf/hetrs for Hermitian complex matrices), which NumPy and CuPy lack
altogether, and the general eigendecomposition geev (NumPy's eig; CuPy has none: other backends fall back here).

NumPy has no LU and only a general solve, so the shared kernels (``arraykernels/decompositions.py``, which
CuPy also runs) eliminate column by column and solve triangular systems as general ones. SciPy's batched
``lu_factor`` and ``solve_triangular`` are the LAPACK routines themselves; the shared kernels stay for what
these do not cover (LU without pivoting, empty matrices, a singular triangle's inf/NaN) and for small matrices.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg

from ember.dispatch import ArgumentError

#: matrices smaller than this go to the shared kernels: their loops run on the whole batch at once, while SciPy
#: calls LAPACK once per matrix, which costs more than it saves on tiny ones
SMALL = 32


def build(shared: dict) -> dict:
    """The overrides, falling back to ``shared``'s kernels of the same ops."""
    shared_lu, shared_solve = shared["linalg_lu_factor_ex"], shared["linalg_solve_triangular"]

    def _lu_factor_ex(a, pivot):
        if not pivot or a.size == 0 or min(a.shape[-2:]) < SMALL:
            return shared_lu(a, pivot)
        with warnings.catch_warnings():  # a zero pivot is reported in info, not warned about
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu, pivots = scipy.linalg.lu_factor(a, check_finite=False)
        zero = np.diagonal(lu, axis1=-2, axis2=-1) == 0
        info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
        return lu.astype(a.dtype, copy=False), (pivots + 1).astype(np.int32), info

    def _solve_triangular(A, B, upper, left, unitriangular):
        if A.size == 0 or B.size == 0 or A.shape[-1] < SMALL:
            return shared_solve(A, B, upper, left, unitriangular)
        try:
            if left:
                x = scipy.linalg.solve_triangular(A, B, lower=not upper, unit_diagonal=unitriangular,
                                                  check_finite=False)
            else:  # XA = B  <=>  A^T X^T = B^T, A^T in the other triangle
                x = np.swapaxes(scipy.linalg.solve_triangular(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2),
                                                              lower=upper, unit_diagonal=unitriangular,
                                                              check_finite=False), -1, -2)
        except np.linalg.LinAlgError:  # a zero on the diagonal: the shared kernel's inf/NaN, as PyTorch
            return shared_solve(A, B, upper, left, unitriangular)
        return np.ascontiguousarray(x, dtype=A.dtype)

    def _ldl_factor_ex(A, hermitian):
        """sytrf (hetrf for Hermitian complex) on each matrix's lower triangle (real: hermitian changes nothing)."""
        sytrf = _ldl_routine("trf", A.dtype, hermitian)
        factor, pivots = np.zeros_like(A), np.zeros(A.shape[:-1], np.int32)
        info = np.zeros(A.shape[:-2], np.int32)
        for index in np.ndindex(A.shape[:-2]):
            ld, ipiv, code = sytrf(A[index], lower=1)
            factor[index], pivots[index], info[index] = np.tril(ld), ipiv, code
        return factor, pivots, info

    def _ldl_solve(LD, pivots, B, hermitian):
        """sytrs per system, the factors broadcast against B's batch."""
        n = LD.shape[-1]
        batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2])
        factors = np.broadcast_to(LD, batch + (n, n))
        swaps, rights = np.broadcast_to(pivots, batch + (n,)), np.broadcast_to(B, batch + B.shape[-2:])
        sytrs = _ldl_routine("trs", LD.dtype, hermitian)
        out = np.empty(batch + B.shape[-2:], B.dtype)
        for index in np.ndindex(batch):
            out[index] = sytrs(factors[index], swaps[index], rights[index], lower=1)[0]
        return out

    def _eig(A):
        """geev on every matrix: eigenvalues and unit-norm eigenvectors, complex even where they are real (NumPy
        answers real arrays then)."""
        if not np.isfinite(A).all():
            raise ArgumentError("linalg.eig: input tensor should not contain infs or NaNs.")  # geev cannot start
        values, vectors = np.linalg.eig(A)
        wanted = np.result_type(A.dtype, np.complex64)
        return values.astype(wanted, copy=False), vectors.astype(wanted, copy=False)

    return {"linalg_lu_factor_ex": _lu_factor_ex, "linalg_solve_triangular": _solve_triangular,
            "linalg_ldl_factor_ex": _ldl_factor_ex, "linalg_ldl_solve": _ldl_solve, "linalg_eig": _eig}


def _ldl_routine(step: str, dtype, hermitian: bool):
    """LAPACK's ?sytrf/?sytrs (step "trf"/"trs") for dtype, or ?hetrf/?hetrs for Hermitian complex matrices."""
    kind = "he" if hermitian and np.dtype(dtype).kind == "c" else "sy"
    return scipy.linalg.get_lapack_funcs(kind + step, dtype=dtype)
