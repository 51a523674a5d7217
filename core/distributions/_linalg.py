"""The small dense linear algebra MultivariateNormal needs, written in Ember ops so that it runs on every
backend and autograd differentiates through it: batched Cholesky factorization and triangular solves.

Both loop over columns (rows) in Python, one batched vector step each, which suits the event sizes of
distributions (tens, not thousands) and keeps every step an ordinary differentiable op.
"""
from __future__ import annotations

from ..dispatch.schema.errors import ShapeError
from ..functions import arange, cat, stack, zeros
from ..tensor import Tensor


def _check_square(name: str, matrix: Tensor) -> int:
    if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
        raise ShapeError(f"{name}: expected a (batch of) square matrices, got shape {tuple(matrix.shape)}")
    return matrix.shape[-1]


def cholesky(matrix: Tensor) -> Tensor:
    """The lower-triangular L with L Lᵀ = matrix, for (batches of) symmetric positive-definite matrices.

    Raises ValueError when a leading minor is not positive (the matrix is not positive-definite)."""
    n = _check_square("cholesky", matrix)
    matrix = (matrix + matrix.mT) * 0.5  # read both triangles, so the gradient is symmetric, as PyTorch's
    columns = []  # column j of L, below and on the diagonal, shape (..., n - j)
    for j in range(n):
        below = matrix[..., j:, j]
        if j:
            done = stack([c[..., j - k:] for k, c in enumerate(columns)], -1)  # L[j:, :j]
            below = below - (done * done[..., :1, :]).sum(-1)
        pivot = below[..., :1]
        if not bool((pivot > 0).all().item()):
            raise ValueError(f"cholesky: the input is not positive-definite (leading minor of order {j + 1} is "
                             f"not positive) for a matrix of shape {tuple(matrix.shape)}")
        root = pivot.sqrt()
        columns.append(cat([root, below[..., 1:] / root], -1))
    zero_blocks = [zeros(tuple(matrix.shape[:-2]) + (j,), dtype=matrix.dtype, device=matrix.device)
                   for j in range(n)]
    return stack([cat([z, c], -1) for z, c in zip(zero_blocks, columns)], -1)


def solve_triangular(matrix: Tensor, rhs: Tensor, *, upper: bool) -> Tensor:
    """X with matrix @ X = rhs for a (batch of) triangular matrices; batch dims broadcast."""
    n = _check_square("solve_triangular", matrix)
    if rhs.ndim < 2 or rhs.shape[-2] != n:
        raise ShapeError(f"solve_triangular: right-hand side of shape {tuple(rhs.shape)} does not fit a matrix of "
                         f"shape {tuple(matrix.shape)}")
    order = range(n - 1, -1, -1) if upper else range(n)
    rows: dict[int, Tensor] = {}  # row i of X, shape (..., 1, k)
    for i in order:
        row = rhs[..., i:i + 1, :]
        if rows:
            known = sorted(rows)
            coefficients = matrix[..., i:i + 1, known[0]:known[-1] + 1]  # the solved rows are contiguous
            row = row - coefficients @ cat([rows[k] for k in known], -2)
        rows[i] = row / matrix[..., i:i + 1, i:i + 1]
    return cat([rows[i] for i in range(n)], -2)


def diagonal(matrix: Tensor) -> Tensor:
    """The main diagonal of the last two dims, shape (..., n)."""
    index = arange(_check_square("diagonal", matrix), device=matrix.device)
    return matrix[..., index, index]
