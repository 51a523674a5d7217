"""Helpers the linear-algebra modules share: the LU-based inverse with the LU pieces it needs, and matmul's
meta. Importing this module declares no op (they live apart from the declarations in decompositions.py so
that linalg.py can import matmul's meta without declaring the decompositions before matmul)."""
from __future__ import annotations

from ...schema.errors import ShapeError
from ...schema.meta import broadcast_shapes, shape
from ..namespace import F
from .matrices import check_info, eye_like, mH


def permutation_of(pivots, m: int):
    """The row order ``perm`` (*, m) with ``A[..., perm, :] = L U`` from LAPACK's 1-based row swaps."""
    return F.lu_pivots_to_permutation(pivots, m)


def permute_rows(x, perm, inverse: bool = False):
    """``x[..., perm, :]`` (or its inverse: the rows put back), batched, differentiable in x."""
    if inverse:
        perm = F.argsort(perm, -1)
    index = F.expand(F.unsqueeze(perm, -1), tuple(perm.shape) + (x.shape[-1],))
    return F.gather(x, -2, index)


def _lu_solve(LU, pivots, B, left=True, adjoint=False):
    """P L U X = B: permute, then two triangular solves (the adjoint system A^H X = B in the reverse order)."""
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return mH(_lu_solve(LU, pivots, mH(B), left=True, adjoint=not adjoint))
    batch = broadcast_shapes("linalg.lu_solve", tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
    B = F.expand(B, batch + tuple(B.shape[-2:]))
    perm = F.expand(permutation_of(pivots, LU.shape[-1]), batch + (LU.shape[-1],))
    if not adjoint:
        half = F.linalg_solve_triangular(LU, permute_rows(B, perm), upper=False, unitriangular=True)
        return F.linalg_solve_triangular(LU, half, upper=True)
    half = F.linalg_solve_triangular(mH(LU), B, upper=False)
    return permute_rows(F.linalg_solve_triangular(mH(LU), half, upper=True, unitriangular=True), perm, inverse=True)


def _inv_ex(A):
    lu, pivots, info = F.linalg_lu_factor_ex(A)
    return _lu_solve(lu, pivots, F.expand(eye_like(A), tuple(A.shape))), info


def _singular_diagonal(code) -> str:
    return (f"The diagonal element {code} is zero, the inversion could not be completed because the input matrix "
            f"is singular.")


def _inv(A):
    out, info = _inv_ex(A)
    check_info("linalg_inv", info, _singular_diagonal)
    return out


def _matmul_meta(a, b, name="matmul"):
    sa, sb = shape(a), shape(b)
    if not sa or not sb:
        raise ShapeError(f"{name}: both arguments need at least 1 dimension, got shapes {sa} and {sb}")
    left = (1,) + sa if len(sa) == 1 else sa
    right = sb + (1,) if len(sb) == 1 else sb
    if left[-1] != right[-2]:
        raise ShapeError(f"{name}: shapes {sa} and {sb} cannot be multiplied ({left[-1]} != {right[-2]})")
    batch = broadcast_shapes(name, left[:-2], right[:-2])
    out = batch + (left[-2], right[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return out
