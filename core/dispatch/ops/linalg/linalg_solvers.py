"""Solving and inverting through the factorizations: LU (solve, inv, det, slogdet) and Cholesky, as composites.

Each is written in the primitives of ops/decompositions.py and Ember ops, so it runs and differentiates on
every backend that has (or falls back to) those primitives, real or complex (Hermitian where real matrices are
symmetric). The ``_ex`` ops return LAPACK's ``info`` per
matrix; their checking twins raise ``LinAlgError`` with PyTorch's words, naming the batch element.
"""
from __future__ import annotations

import numpy as np

from ...schema.dtypes import float32, int32
from ...schema.errors import ShapeError
from ...schema.meta import broadcast_shapes, shape
from ...schema import Sample, defop
from ..namespace import F
from .decompositions import ONE_BY_ONE, ldl_factor_reference, lu_factor_reference, spd, symmetric, well_conditioned
from .matrices import (check_info, diag_of, eye_like, floating, floating_outputs, matrix_shape, mH, mT,
                       reads_results)
from ._shared import _inv, _inv_ex, _lu_solve, permutation_of, permute_rows


# -- Cholesky ---------------------------------------------------------------------------------------

def _not_positive_definite(code) -> str:
    return (f"The factorization could not be completed because the input is not positive-definite (the leading "
            f"minor of order {code} is not positive-definite).")


def _linalg_cholesky(A, upper=False):
    factor, info = F.linalg_cholesky_ex(A, upper=upper)
    check_info("linalg_cholesky", info, _not_positive_definite)
    return factor


def _adjoint_reference(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _cholesky_reference(A, upper=False):
    lower = np.linalg.cholesky(_adjoint_reference(A) if upper else A)
    return _adjoint_reference(lower) if upper else lower


def _cholesky_samples(make, dtype):
    # the differentiable sample second: complex dtypes take only the first two samples
    yield Sample((spd(make, 3),), gradcheck=False, note="symmetric input: PyTorch's symmetrized gradient")
    yield Sample((spd(make, 1, (2,)),), gradcheck=not make(()).dtype.is_complex, note=ONE_BY_ONE)
    yield Sample((spd(make, 2, (2,)), True), gradcheck=False, note="batched, upper")


def _square_meta(name):
    def meta(A, *rest, **kwargs):
        return matrix_shape(name, A, square=True)
    return meta


defop("linalg_cholesky(Tensor A, *, bool upper=False)", "linalg", kind="composite", promotion=floating,
      torch_keywords={"input": "A"},
      normalize=reads_results,
      dtypes="float+complex", meta=_square_meta("linalg_cholesky"), composite=_linalg_cholesky,
      reference=_cholesky_reference,
      samples=lambda make, dtype: (Sample((spd(make, 3),), gradcheck=False),
                                   Sample((spd(make, 1, (2,)),), gradcheck=not make(()).dtype.is_complex,
                                          note=ONE_BY_ONE),
                                   Sample((spd(make, 2, (2,)),), {"upper": True}, gradcheck=False)),
      method=False, doc="the Cholesky factor of symmetric positive-definite matrices; LinAlgError otherwise")
defop("cholesky(Tensor input, bool upper=False)", "linalg", kind="composite", promotion=floating,
      dtypes="float+complex",
      normalize=reads_results,
      meta=_square_meta("cholesky"), composite=lambda input, upper=False: _linalg_cholesky(input, upper=upper),
      reference=_cholesky_reference, samples=_cholesky_samples,
      doc="torch.cholesky (deprecated in PyTorch for linalg.cholesky): the same factor")


def _cholesky_solve(B, L, upper=False):
    """A X = B with A = L L^H (or U^H U): two triangular solves."""
    lower = mH(L) if upper else L
    half = F.linalg_solve_triangular(lower, B, upper=False)
    return F.linalg_solve_triangular(mH(lower), half, upper=True)


def _cholesky_solve_meta(B, L, upper=False):
    b, a = matrix_shape("cholesky_solve", B), matrix_shape("cholesky_solve", L, square=True)
    if b[-2] != a[-1]:
        raise ShapeError(f"cholesky_solve: Incompatible matrix sizes for the right-hand side {b} and the factor {a}")
    return broadcast_shapes("cholesky_solve", b[:-2], a[:-2]) + b[-2:]


def _cholesky_solve_reference(B, L, upper=False):
    lower = _adjoint_reference(np.triu(L)) if upper else np.tril(L)
    return np.linalg.solve(lower @ _adjoint_reference(lower), B)


def _in_sample_dtype(make, t):
    """A float32-built sample tensor in the dtype under test (refused dtypes get samples too)."""
    return F.to_dtype(t, make(()).dtype)


def _factor(make, n, batch=(), upper=False):
    spd32 = F.to_dtype(spd(make, n, batch), float32)
    return _in_sample_dtype(make, F.linalg_cholesky_ex(spd32, upper=upper)[0])


def _cholesky_solve_samples(make, dtype):
    yield Sample((make((3, 2)), _factor(make, 3)), note="lower factor")
    yield Sample((make((2, 3, 1)), _factor(make, 3, upper=True), True), note="upper factor, batched right side")


defop("cholesky_solve(Tensor B, Tensor L, bool upper=False)", "linalg", kind="composite",
      torch_keywords={"input": "B", "input2": "L"},
      promotion=floating, dtypes="float+complex", meta=_cholesky_solve_meta, composite=_cholesky_solve,
      reference=_cholesky_solve_reference, samples=_cholesky_solve_samples,
      doc="solves A X = B given B and the Cholesky factor L of A (lower, or upper: A = U^T U)")


def _cholesky_inverse(L, upper=False):
    return _cholesky_solve(eye_like(L), L, upper)


def _cholesky_inverse_reference(L, upper=False):
    return _cholesky_solve_reference(np.broadcast_to(np.eye(L.shape[-1]), L.shape), L, upper)


defop("cholesky_inverse(Tensor L, bool upper=False)", "linalg", kind="composite", promotion=floating,
      torch_keywords={"input": "L"},
      dtypes="float+complex", meta=_square_meta("cholesky_inverse"), composite=_cholesky_inverse,
      reference=_cholesky_inverse_reference,
      samples=lambda make, dtype: (Sample((_factor(make, 3),)), Sample((_factor(make, 2, (2,), True), True))),
      doc="the inverse of A from its Cholesky factor")


# -- LU ---------------------------------------------------------------------------------------------

def _lu_factor(A, pivot=True):
    lu, pivots, info = F.linalg_lu_factor_ex(A, pivot=pivot)

    def zero_pivot(code):
        return (f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. If you "
                f"still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                f"linalg.lu_factor_ex(A, pivot)")
    check_info("linalg_lu_factor", info, zero_pivot)
    return lu, pivots


def _lu_factor_meta(A, pivot=True):
    s = matrix_shape("linalg_lu_factor", A)
    return s, s[:-2] + (min(s[-2:]),)


defop("linalg_lu_factor(Tensor A, *, bool pivot=True)", "linalg", kind="composite", normalize=reads_results,
      promotion=floating_outputs("f", "i"), dtypes="float+complex", meta=_lu_factor_meta, composite=_lu_factor,
      outputs=("LU", "pivots"), reference=lambda A, pivot=True: lu_factor_reference(A)[:2],
      samples=lambda make, dtype: (Sample((well_conditioned(make, (3, 3)),)), Sample((make((2, 4, 4)),))),
      method=False, doc="LU with partial pivoting, packed (see linalg_lu_factor_ex); LinAlgError on a zero pivot")


def _unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = F.zeros((0,), dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        lower = F.add(F.tril(F.slice(LU_data, -1, 0, k), -1), F.eye(m, k, dtype=LU_data.dtype, device=LU_data.device))
        upper = F.triu(F.slice(LU_data, -2, 0, k))
    else:
        lower = upper = empty
    if unpack_pivots:
        eye = F.expand(eye_like(LU_data, m), tuple(LU_data.shape[:-2]) + (m, m))
        permutation = permute_rows(eye, permutation_of(LU_pivots, m), inverse=True)
    else:
        permutation = empty
    return permutation, lower, upper


def _lu_unpack_meta(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    s = matrix_shape("lu_unpack", LU_data)
    batch, (m, n) = s[:-2], s[-2:]
    k = min(m, n)
    p = batch + (m, m) if unpack_pivots else (0,)
    return (p, batch + (m, k), batch + (k, n)) if unpack_data else (p, (0,), (0,))


def _lu_unpack_reference(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    lower = np.tril(LU_data[..., :k], -1) + np.eye(m, k)
    upper = np.triu(LU_data[..., :k, :])
    perms = []
    for piv in LU_pivots.reshape(-1, k):
        order = list(range(m))
        for i, p in enumerate(piv):
            order[i], order[p - 1] = order[p - 1], order[i]
        perms.append(np.eye(m)[:, order])  # P with A = P L U: column i of P is e_order[i]
    p = np.stack(perms).reshape(LU_data.shape[:-2] + (m, m)).astype(LU_data.dtype) if perms else \
        np.zeros(LU_data.shape[:-2] + (m, m), LU_data.dtype)
    return p, lower, upper


def _lu_unpack_samples(make, dtype):
    for size in ((3, 3), (2, 4, 3), (3, 4)):
        lu, pivots, _ = F.linalg_lu_factor_ex(make(size, dtype=float32))
        yield Sample((_in_sample_dtype(make, lu), pivots))


defop("lu_unpack(Tensor LU_data, Index LU_pivots, bool unpack_data=True, bool unpack_pivots=True)", "linalg",
      kind="composite", promotion=floating_outputs("f", "f", "f"), dtypes="float+complex", meta=_lu_unpack_meta,
      composite=_unpack, outputs=("P", "L", "U"), reference=_lu_unpack_reference, samples=_lu_unpack_samples,
      method=False, doc="P, L, U with A = P L U from linalg.lu_factor's packed LU and pivots")


def _lu(A, pivot=True):
    lu, pivots, _ = F.linalg_lu_factor_ex(A, pivot=pivot)
    return _unpack(lu, pivots)


def _lu_reference(A, pivot=True):
    import scipy.linalg  # the conformance suite's reference only: importing SciPy's linalg takes ember's import long
    return tuple(scipy.linalg.lu(A))


defop("linalg_lu(Tensor A, *, bool pivot=True)", "linalg", kind="composite", promotion=floating_outputs("f", "f", "f"),
      dtypes="float+complex", meta=lambda A, pivot=True: _lu_unpack_meta(A, None), composite=_lu,
      outputs=("P", "L", "U"), reference=_lu_reference,
      samples=lambda make, dtype: (Sample((well_conditioned(make, (3, 3)),)), Sample((make((2, 4, 3)),)),
                                   Sample((make((2, 3)),))),
      method=False, doc="A = P L U with partial pivoting (rectangular and batched A too)")


def _lu_solve_meta(LU, pivots, B, left=True, adjoint=False):
    a, b = matrix_shape("linalg_lu_solve", LU, square=True), matrix_shape("linalg_lu_solve", B)
    if (b[-2] if left else b[-1]) != a[-1]:
        raise ShapeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({a[-2]}x{a[-1]} and {b[-2]}x{b[-1]})")
    return broadcast_shapes("linalg.lu_solve", a[:-2], b[:-2]) + b[-2:]


def _lu_solve_reference(LU, pivots, B, left=True, adjoint=False):
    p, lower, upper = _lu_unpack_reference(LU, pivots)
    a = p @ lower @ upper
    a = _adjoint_reference(a) if adjoint else a
    if left:
        return np.linalg.solve(a, B)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(B, -1, -2)), -1, -2)


def _factored(make, shape):
    lu, pivots, _ = F.linalg_lu_factor_ex(F.to_dtype(well_conditioned(make, shape), float32))
    return _in_sample_dtype(make, lu), pivots


def _lu_solve_samples(make, dtype):
    lu, pivots = _factored(make, (3, 3))
    yield Sample((lu, pivots, make((3, 2))), note="left")
    yield Sample((lu, pivots, make((2, 2, 3))), {"left": False, "adjoint": True}, note="right, adjoint, batched B")
    lu, pivots = _factored(make, (2, 3, 3))
    yield Sample((lu, pivots, make((3, 1))), {"adjoint": True}, note="batched factor")


defop("linalg_lu_solve(Tensor LU, Index pivots, Tensor B, *, bool left=True, bool adjoint=False)", "linalg",
      kind="composite", promotion=floating, dtypes="float+complex", meta=_lu_solve_meta, composite=_lu_solve,
      reference=_lu_solve_reference, samples=_lu_solve_samples, method=False,
      doc="solves AX = B (or XA = B, or with A^T) given linalg.lu_factor's LU and pivots")


def _legacy_lu_solve_meta(b, LU_data, LU_pivots):
    return _lu_solve_meta(LU_data, LU_pivots, b)


defop("lu_solve(Tensor b, Tensor LU_data, Index LU_pivots)", "linalg", kind="composite", promotion=floating,
      torch_keywords={"input": "b"},
      dtypes="float+complex", meta=_legacy_lu_solve_meta,
      composite=lambda b, LU_data, LU_pivots: _lu_solve(LU_data, LU_pivots, b),
      reference=lambda b, LU_data, LU_pivots: _lu_solve_reference(LU_data, LU_pivots, b),
      samples=lambda make, dtype: (Sample((s.args[2], s.args[0], s.args[1])) for s in _lu_solve_samples(make, dtype)
                                   if not s.kwargs),
      doc="torch.lu_solve(b, LU_data, LU_pivots): the solution of A x = b (deprecated in PyTorch)")


# -- solve, inv -------------------------------------------------------------------------------------

def _vector_rhs(A, B) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D or has A's shape without the last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _solve_ex(A, B, left=True):
    vector = _vector_rhs(A, B)
    rhs = F.unsqueeze(B, -1 if left else -2) if vector else B
    lu, pivots, info = F.linalg_lu_factor_ex(A)
    out = _lu_solve(lu, pivots, rhs, left=left)
    return (F.squeeze(out, [-1 if left else -2]) if vector else out), info


def _solve_meta(A, B, left=True):
    a, b = matrix_shape("linalg_solve", A, square=True), shape(B)
    vector = len(b) == 1 or (len(b) == len(a) - 1 and b == a[:-1])
    if not b or (not vector and len(b) < 2):
        raise ShapeError(f"linalg.solve: Expected B to have at least 1 dimension, got shape {b}")
    inner = b[-1] if vector else (b[-2] if left else b[-1])
    if inner != a[-1]:
        raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({'x'.join(map(str, a[-2:]))} and "
                         f"{'x'.join(map(str, b[-2:]))})")
    if vector:
        return broadcast_shapes("linalg.solve", a[:-2], b[:-1]) + b[-1:]
    return broadcast_shapes("linalg.solve", a[:-2], b[:-2]) + b[-2:]


def _solve_reference(A, B, left=True):
    if B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1]):
        return np.linalg.solve(A if left else np.swapaxes(A, -1, -2), B[..., None])[..., 0]
    if left:
        return np.linalg.solve(A, B)
    return np.swapaxes(np.linalg.solve(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2)


def _solve_samples(make, dtype):
    yield Sample((well_conditioned(make, (3, 3)), make((3, 2))), note="matrix right side")
    yield Sample((well_conditioned(make, (2, 3, 3)), make((2, 3))), note="batch of vectors")
    yield Sample((well_conditioned(make, (3, 3)), make((2, 4, 3))), {"left": False}, note="XA = B, broadcast")


def _singular(code) -> str:
    return "The solver failed because the input matrix is singular."


def _solve(A, B, left=True):
    out, info = _solve_ex(A, B, left=left)
    check_info("linalg_solve", info, _singular)
    return out


defop("linalg_solve_ex(Tensor A, Tensor B, *, bool left=True)", "linalg", kind="composite",
      promotion=floating_outputs("f", "i"), dtypes="float+complex",
      meta=lambda A, B, left=True: (_solve_meta(A, B, left), shape(A)[:-2]), composite=_solve_ex,
      outputs=("result", "info"),
      reference=lambda A, B, left=True: (_solve_reference(A, B, left), np.zeros(A.shape[:-2], np.int32)),
      samples=_solve_samples, method=False, doc="linalg.solve plus LU's info per matrix instead of an error")
defop("linalg_solve(Tensor A, Tensor B, *, bool left=True)", "linalg", kind="composite", promotion=floating,
      normalize=reads_results,
      dtypes="float+complex", meta=_solve_meta, composite=_solve, reference=_solve_reference, samples=_solve_samples,
      method=False, doc="X with AX = B (or XA = B) for square invertible A; B may be a (batch of) vector(s)")


def _inv_samples(make, dtype):
    yield Sample((well_conditioned(make, (3, 3)),))
    yield Sample((make((2, 4, 4)),), note="batched, pivoting")


defop("linalg_inv_ex(Tensor A)", "linalg", kind="composite", promotion=floating_outputs("f", "i"),
      dtypes="float+complex",
      meta=lambda A: (matrix_shape("linalg_inv_ex", A, square=True), shape(A)[:-2]), composite=_inv_ex,
      outputs=("inverse", "info"), reference=lambda A: (np.linalg.inv(A), np.zeros(A.shape[:-2], np.int32)),
      samples=_inv_samples, method=False, doc="the inverse plus LU's info per matrix instead of an error")
defop("linalg_inv(Tensor A)", "linalg", kind="composite", normalize=reads_results, promotion=floating,
      dtypes="float+complex",
      meta=_square_meta("linalg_inv"), composite=_inv, reference=np.linalg.inv, samples=_inv_samples, method=False,
      doc="the inverse of square invertible matrices; LinAlgError naming the zero pivot otherwise")
defop("inverse(Tensor input)", "linalg", kind="composite", normalize=reads_results, promotion=floating,
      dtypes="float+complex",
      meta=_square_meta("inverse"), composite=_inv, reference=np.linalg.inv, samples=_inv_samples,
      doc="torch.inverse: linalg.inv")


# -- determinants -----------------------------------------------------------------------------------

def _lu_parts(A):
    """U's diagonal and the permutation's sign (+1/-1) of A's LU factorization."""
    lu, pivots, _ = F.linalg_lu_factor_ex(A)
    n = A.shape[-1]
    moved = F.ne(pivots, F.arange(1, n + 1, 1, dtype=pivots.dtype, device=pivots.device))
    swaps = F.sum(F.to_dtype(moved, int32), -1)
    sign = F.sub(1.0, F.mul(F.to_dtype(F.remainder(swaps, 2), A.dtype), 2.0))
    return diag_of(lu), sign


def _det(A):
    diagonal, sign = _lu_parts(A)
    return F.mul(F.prod(diagonal, -1), sign)


def _slogdet(A):
    """The sign (of unit modulus, for complex A) and log |det A|, real."""
    diagonal, sign = _lu_parts(A)
    sign = F.mul(sign, F.prod(F.sgn(diagonal) if A.dtype.is_complex else F.sign(diagonal), -1))
    return sign, F.sum(F.log(F.abs(diagonal)), -1)


def _logdet(A):
    """log det A: NaN for a negative real determinant; the principal logarithm for a complex one."""
    sign, logabsdet = _slogdet(A)
    if A.dtype.is_complex:
        return F.add(F.log(sign), logabsdet)
    return F.where(F.lt(sign, 0), F.full((), float("nan"), dtype=A.dtype, device=A.device), logabsdet)


def _batch_meta(name):
    def meta(A):
        return matrix_shape(name, A, square=True)[:-2]
    return meta


def _det_samples(make, dtype):
    yield Sample((make((3, 3)),))
    yield Sample((make((2, 2, 2)),), note="batched")
    yield Sample((make((1, 1)),), note="1 x 1")


def _positive_det_samples(make, dtype):
    yield Sample((spd(make, 3),), note="positive determinant")
    yield Sample((spd(make, 2, (2,)),), note="batched")


def _slogdet_reference(A):
    return tuple(np.linalg.slogdet(A))


def _logdet_reference(A):
    sign, logabsdet = np.linalg.slogdet(A)
    if np.iscomplexobj(A):
        return np.log(sign) + logabsdet
    return np.where(sign < 0, np.nan, logabsdet)


defop("linalg_det(Tensor A)", "linalg", kind="composite", promotion=floating, dtypes="float+complex",
      meta=_batch_meta("linalg_det"), composite=_det, reference=np.linalg.det, samples=_det_samples, method=False,
      doc="determinants, from the LU factorization")
defop("det(Tensor input)", "linalg", kind="composite", promotion=floating, dtypes="float+complex",
      meta=_batch_meta("det"), composite=_det, reference=np.linalg.det, samples=_det_samples,
      doc="torch.det: linalg.det")
defop("linalg_slogdet(Tensor A)", "linalg", kind="composite", promotion=floating_outputs("f", "r"),
      dtypes="float+complex",
      meta=lambda A: (_batch_meta("linalg_slogdet")(A),) * 2, composite=_slogdet, outputs=("sign", "logabsdet"),
      reference=_slogdet_reference, samples=_det_samples, method=False,
      doc="sign and log of the absolute value of determinants (no overflow for large matrices)")
defop("slogdet(Tensor input)", "linalg", kind="composite", promotion=floating_outputs("f", "r"),
      dtypes="float+complex",
      meta=lambda input: (_batch_meta("slogdet")(input),) * 2, composite=_slogdet, outputs=("sign", "logabsdet"),
      reference=_slogdet_reference, samples=_det_samples, doc="torch.slogdet: linalg.slogdet")
defop("logdet(Tensor input)", "linalg", kind="composite", promotion=floating, dtypes="float+complex",
      meta=_batch_meta("logdet"), composite=_logdet, reference=_logdet_reference, samples=_positive_det_samples,
      doc="log of determinants: NaN for a negative one, -inf for zero")


# -- triangular_solve (torch's legacy name) ---------------------------------------------------------

def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    coefficient = mT(A) if transpose else A
    solution = F.linalg_solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    batch = tuple(solution.shape[:-2])
    return solution, F.clone(F.expand(A, batch + tuple(A.shape[-2:])))


def _triangular_solve_meta(b, A, upper=True, transpose=False, unitriangular=False):
    b, a = matrix_shape("triangular_solve", b), matrix_shape("triangular_solve", A, square=True)
    if b[-2] != a[-1]:
        raise ShapeError(f"triangular_solve: Incompatible matrix sizes for A {a} and b {b}")
    batch = broadcast_shapes("triangular_solve", b[:-2], a[:-2])
    return batch + b[-2:], batch + a[-2:]


def _triangular_solve_reference(b, A, upper=True, transpose=False, unitriangular=False):
    from .decompositions import solve_triangular_reference
    a = np.swapaxes(np.triu(A) if upper else np.tril(A), -1, -2) if transpose else A
    solution = solve_triangular_reference(a, b, upper != transpose, True, unitriangular)
    batch = np.broadcast_shapes(b.shape[:-2], A.shape[:-2])
    return solution, np.broadcast_to(A, batch + A.shape[-2:])


def _triangular_solve_samples(make, dtype):
    a = well_conditioned(make, (3, 3))
    yield Sample((make((3, 2)), a))
    yield Sample((make((2, 3, 1)), a, False, True), note="lower, transposed")
    yield Sample((make((3, 2)), a, True, False, True), note="unit diagonal")


defop("triangular_solve(Tensor b, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False)",
      "linalg", kind="composite", promotion=floating_outputs("f", "f"), dtypes="float+complex",
      meta=_triangular_solve_meta,
      torch_keywords={"input": "b"},
      composite=_triangular_solve, outputs=("solution", "cloned_coefficient"),
      reference=_triangular_solve_reference, samples=_triangular_solve_samples,
      doc="torch.triangular_solve(b, A): the solution of A x = b (or A^T x = b) and a copy of A (deprecated in "
          "PyTorch for linalg.solve_triangular)")


# -- LDL^T ------------------------------------------------------------------------------------------

def _ldl_factor(A, hermitian=False):
    factor, pivots, info = F.linalg_ldl_factor_ex(A, hermitian=hermitian)
    check_info("linalg_ldl_factor", info, lambda code: (
        f"The factorization could not be completed because the block diagonal matrix D has a zero at position "
        f"{code}: the input is singular"))
    return factor, pivots


defop("linalg_ldl_factor(Tensor A, *, bool hermitian=False)", "linalg", torch_keywords={"input": "A"}, kind="composite",
      promotion=floating_outputs("f", "i"), dtypes="float+complex", normalize=reads_results,
      meta=lambda A, hermitian=False: (matrix_shape("linalg_ldl_factor", A, square=True), shape(A)[:-1]),
      composite=_ldl_factor, outputs=("LD", "pivots"),
      reference=lambda A, hermitian=False: ldl_factor_reference(A)[:2],
      samples=lambda make, dtype: (Sample((symmetric(make, 4),)), Sample((symmetric(make, 3, (2,)),))),
      differentiable=False, method=False,
      doc="linalg.ldl_factor_ex's LD and pivots; LinAlgError where D is singular")
