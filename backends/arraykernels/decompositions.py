"""The matrix decompositions (ops/linalg/decompositions.py) on the library's LAPACK, batched over leading dims.

Failures are data, not exceptions: cholesky and LU report the failing order in ``info`` as LAPACK does, and
the triangular solve of a singular matrix gives inf/NaN, as PyTorch's. LU is a vectorized Doolittle
elimination over the whole batch (NumPy has no getrf; one loop per column, each step on every matrix).
Complex matrices take the same roads: Hermitian where real ones are symmetric, pivots chosen by |re| + |im| as
LAPACK's i?amax chooses them.
"""
from __future__ import annotations

import math

import numpy as np

from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp

    def _flat(a):
        """The matrices of a batch in one leading dim (its size counted: -1 is ambiguous for no elements)."""
        return a.reshape((math.prod(a.shape[:-2]),) + a.shape[-2:])

    def _conj(a):
        """a's conjugate; a itself when real (NumPy's conj would copy it)."""
        return a.conj() if a.dtype.kind == "c" else a

    def _cholesky_by_columns(a):
        """Cholesky of every matrix, column by column: the factor and LAPACK's info (first failing order)."""
        flat = _flat(a)
        n = flat.shape[-1]
        lower = xp.zeros_like(flat)
        info = xp.zeros(flat.shape[0], np.int32)
        for j in range(n):
            row = _conj(lower[:, j, :j])
            d = (flat[:, j, j] - xp.sum(lower[:, j, :j] * row, axis=-1)).real
            bad = ~(d > 0)
            info = xp.where((info == 0) & bad, j + 1, info).astype(np.int32)
            root = xp.sqrt(xp.where(bad, 1, d))
            lower[:, j, j] = root
            below = flat[:, j + 1:, j] - xp.einsum("bik,bk->bi", lower[:, j + 1:, :j], row)
            lower[:, j + 1:, j] = below / root[:, None]
        lower[info != 0] = 0
        return lower.reshape(a.shape), info.reshape(a.shape[:-2])

    def _cholesky_ex(a, upper):
        if upper:  # U reads the upper triangle, as LAPACK's potrf('U'): the lower factor of A^H, adjoint
            a = _conj(xp.swapaxes(a, -1, -2))
        try:
            lower = xp.linalg.cholesky(a)
            info = xp.zeros(a.shape[:-2], np.int32)
            if not bool(xp.all(xp.isfinite(lower))):  # CuPy fills failures with NaN instead of raising
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            lower, info = _cholesky_by_columns(a)
        return (xp.ascontiguousarray(_conj(xp.swapaxes(lower, -1, -2))) if upper else lower), info

    def _qr(a, mode):
        if mode == "r":
            return xp.zeros((0,), a.dtype), xp.linalg.qr(a, mode="r")
        q, r = xp.linalg.qr(a, mode=mode)
        return q, r

    def _svd(a, full_matrices):
        u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
        return u, s, vh

    def _eigh(a, UPLO):
        values, vectors = xp.linalg.eigh(a, UPLO=UPLO)
        return values, vectors

    def _pivot_size(column):
        """What partial pivoting maximizes: |x|, or |re| + |im| for complex x (LAPACK's i?amax)."""
        if column.dtype.kind == "c":
            return xp.abs(column.real) + xp.abs(column.imag)
        return xp.abs(column)

    def _lu_factor_ex(a, pivot):
        flat = _flat(a).copy()
        count, m, n = flat.shape
        k = min(m, n)
        pivots = xp.zeros((count, k), np.int32)
        info = xp.zeros(count, np.int32)
        rows = xp.arange(count)
        for j in range(k):
            if pivot:
                p = j + xp.argmax(_pivot_size(flat[:, j:, j]), axis=1)
                top, chosen = flat[rows, j, :].copy(), flat[rows, p, :].copy()
                flat[rows, j, :], flat[rows, p, :] = chosen, top
                pivots[:, j] = p + 1
            else:
                pivots[:, j] = j + 1
            d = flat[:, j, j]
            zero = d == 0
            info = xp.where((info == 0) & zero, j + 1, info).astype(np.int32)
            column = flat[:, j + 1:, j]
            flat[:, j + 1:, j] = xp.where(zero[:, None], column, column / xp.where(zero, 1, d)[:, None])
            flat[:, j + 1:, j + 1:] -= flat[:, j + 1:, j:j + 1] * flat[:, j:j + 1, j + 1:]
        batch = a.shape[:-2]
        return flat.reshape(a.shape), pivots.reshape(batch + (k,)), info.reshape(batch)

    def _common_batch(a, b):
        """``a`` and ``b`` broadcast to their common batch dims: CuPy's solvers take only equal batches
        (NumPy 2's broadcast them)."""
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:])

    def _substitute(a, b, upper):
        """Back or forward substitution over the batch: inf/NaN where a diagonal entry is 0, as PyTorch."""
        a, x = _common_batch(a, b)
        x = x.copy()
        n = a.shape[-1]
        order = range(n - 1, -1, -1) if upper else range(n)
        with lib.quiet():
            for i in order:
                done = slice(i + 1, n) if upper else slice(0, i)
                x[..., i, :] -= xp.einsum("...k,...kj->...j", a[..., i, done], x[..., done, :])
                x[..., i, :] /= a[..., i, i:i + 1]
        return x

    def _solve_triangular(A, B, upper, left, unitriangular):
        n = A.shape[-1]
        a = xp.triu(A) if upper else xp.tril(A)
        if unitriangular:
            eye = xp.eye(n, dtype=a.dtype)
            a = a * (1 - eye) + eye
        if not left:  # XA = B  <=>  A^T X^T = B^T
            a, B, upper = xp.swapaxes(a, -1, -2), xp.swapaxes(B, -1, -2), not upper
        a, B = _common_batch(a, B)
        try:
            x = xp.linalg.solve(a, B)
            if not bool(xp.all(xp.isfinite(x))):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:  # singular: substitution gives PyTorch's inf/NaN
            x = _substitute(a, B, upper)
        return xp.ascontiguousarray(xp.swapaxes(x, -1, -2)) if not left else x

    def _pivots_to_permutation(pivots, m):
        batch, k = pivots.shape[:-1], pivots.shape[-1]
        count = int(np.prod(batch))  # not reshape's -1, which an empty k leaves undetermined
        swaps = pivots.reshape((count, k)).astype(np.int64) - 1
        if swaps.size and not bool(((swaps >= 0) & (swaps < m)).all()):
            raise IndexError(f"lu_pivots_to_permutation: pivots must lie between 1 and m = {m}, inclusive")
        perm = xp.broadcast_to(xp.arange(m, dtype=np.int64), (count, m)).copy()
        rows = xp.arange(count)
        for i in range(k):
            j = swaps[:, i]
            here, there = perm[:, i].copy(), perm[rows, j].copy()
            perm[:, i], perm[rows, j] = there, here
        return perm.reshape(batch + (m,))

    return {"lu_pivots_to_permutation": _pivots_to_permutation, "linalg_cholesky_ex": _cholesky_ex, "linalg_qr": _qr,
            "linalg_svd": _svd, "linalg_eigh": _eigh, "linalg_lu_factor_ex": _lu_factor_ex,
            "linalg_solve_triangular": _solve_triangular}
