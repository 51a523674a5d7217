"""The matrix decompositions: the few linear-algebra PRIMITIVES every other linalg op is composed of.

cholesky, QR, SVD, the symmetric eigendecomposition, LU with partial pivoting and the triangular solve. A
backend implements them from its LAPACK (the cpu and cuda backends from NumPy/CuPy, in
``backends/arraykernels/decompositions.py``); a backend without them runs them through the explicit CPU
fallback (``ember.dispatch.execution.fallback``), and its conformance report lists them so (``optional_kernel``).
Factorizations that can fail report it in an int32 ``info`` output, as LAPACK and PyTorch's ``_ex`` ops do;
the checking ops (ops/linalg_solvers.py) turn it into ``LinAlgError``.

Derivatives are PyTorch's, written in Ember ops (so they run on every backend and differentiate again), with
its convention for complex matrices (the conjugate Wirtinger derivative: conjugate transposes where real matrices
have transposes). Those of svd and eigh hold for gauge-invariant losses only, as PyTorch documents: the singular
vectors and eigenvectors are defined up to sign (a phase e^{i phi} when complex), so a loss that depends on it
has no derivative.
"""
from __future__ import annotations

import numpy as np

from ...schema.dtypes import float32
from ...schema.errors import ArgumentError, EmberError, ShapeError
from ...schema import rules
from ...schema.meta import shape
from ...schema import Gauge, Sample, defop
from ..namespace import F
from .matrices import (check_phase_invariance, diag_embed, diag_of, floating, floating_outputs, matrix_shape, mH,
                       mT)
from ._shared import permutation_of, permute_rows


def _sample_matrix(make, shape: tuple):
    """Random entries: complex in a complex sample's dtype, otherwise float32 (so that samples of the dtypes an op
    refuses can be made too)."""
    return make(shape) if make(()).dtype.is_complex else make(shape, dtype=float32)


def spd(make, n: int, batch: tuple = ()):
    """A well-conditioned symmetric (Hermitian) positive-definite matrix on the device under test, in the sample's
    dtype."""
    x = _sample_matrix(make, batch + (n, n))
    spd32 = F.add(F.matmul(x, mH(x)), F.mul(F.eye(n, dtype=x.dtype, device=x.device), float(n)))
    return F.to_dtype(spd32, make(()).dtype)


def well_conditioned(make, shape: tuple):
    """A matrix whose leading square block is diagonally dominant: far from singular, and no pivoting ties."""
    x = _sample_matrix(make, shape)
    bump = F.eye(shape[-2], shape[-1], dtype=x.dtype, device=x.device)
    return F.to_dtype(F.add(x, F.mul(bump, float(min(shape[-2:]) + 2))), make(()).dtype)


#: a real 1 x 1 matrix is the only symmetric input finite differences keep symmetric; a complex one's diagonal
#: still moves off the real line, which PyTorch's Cholesky gradient (Hermitian input assumed) does not follow
ONE_BY_ONE = "1 x 1 (the only shape finite differences see symmetrically)"


def _tril_or_triu(x, upper: bool, diagonal: int = 0):
    return F.triu(x, diagonal) if upper else F.tril(x, -diagonal)


# -- cholesky ---------------------------------------------------------------------------------------

def _cholesky_meta(a, upper=False):
    s = matrix_shape("linalg_cholesky_ex", a, square=True)
    return s, s[:-2]


def _cholesky_derivative(grads, upper, results):
    """gA = L^-H phi L^-1 with phi = (tril(P) + tril(P, -1)^H) / 2, P = L^H gL (PyTorch's: Hermitian for real
    matrices, where it equals the symmetrized gradient)."""
    grad = grads[0]
    if grad is None:
        return None
    lower = mH(results[0]) if upper else results[0]
    grad = mH(grad) if upper else grad
    product = F.tril(F.matmul(mH(lower), grad))
    phi = F.mul(F.add(product, mH(F.tril(product, -1))), 0.5)
    left = F.linalg_solve_triangular(mH(lower), phi, upper=True)
    return F.linalg_solve_triangular(lower, left, upper=False, left=False)


def _cholesky_reference(a, upper=False):
    lower = np.linalg.cholesky(np.conj(np.swapaxes(a, -1, -2)) if upper else a)
    return (np.conj(np.swapaxes(lower, -1, -2)) if upper else lower), np.zeros(a.shape[:-2], np.int32)


def _cholesky_samples(make, dtype):
    # the differentiable sample second: complex dtypes take only the first two samples
    yield Sample((spd(make, 3),), gradcheck=False, note="symmetric input: PyTorch's symmetrized gradient")
    yield Sample((spd(make, 1, (2,)),), gradcheck=not make(()).dtype.is_complex, note=ONE_BY_ONE)
    yield Sample((spd(make, 2, (2,)),), {"upper": True}, gradcheck=False, note="batched, upper")


defop("linalg_cholesky_ex(Tensor input, *, bool upper=False)", "linalg", batch="trailing",
      promotion=floating_outputs("f", "i"),
      dtypes="float+complex", meta=_cholesky_meta, outputs=("L", "info"), derivative=_cholesky_derivative,
      reference=_cholesky_reference, samples=_cholesky_samples, method=False, optional_kernel=True,
      doc="the Cholesky factor of symmetric (Hermitian) positive-definite matrices (reading the lower triangle, or "
          "the upper one for upper=True) and, per matrix, the order of the first leading minor that is not "
          "positive-definite (0: success)")


# -- QR ---------------------------------------------------------------------------------------------

_QR_MODES = ("reduced", "complete", "r")


def _qr_normalize(op, args):
    if args["mode"] not in _QR_MODES:
        raise ArgumentError(f"linalg.qr: qr received unrecognized mode '{args['mode']}' but expected one of "
                            f"'reduced' (default), 'r', or 'complete'")


def _qr_meta(a, mode="reduced"):
    s = matrix_shape("linalg_qr", a)
    m, n = s[-2:]
    k = m if mode == "complete" else min(m, n)
    q = (0,) if mode == "r" else s[:-2] + (m, k)
    return q, s[:-2] + (k, n)


def _qr_square_backward(grad_q, grad_r, q, r):
    """A = QR with R square (m >= n): gA = (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q (copyltu keeping the real
    part of M's diagonal, for complex matrices)."""
    m = F.zeros_like(r)
    if grad_r is not None:
        m = F.add(m, F.matmul(r, mH(grad_r)))
    if grad_q is not None:
        m = F.sub(m, F.matmul(mH(grad_q), q))
    copied = F.add(F.tril(m), mH(F.tril(m, -1)))
    if m.dtype.is_complex:
        copied = F.sub(copied, diag_embed(F.mul(F.imag(diag_of(m)), 1j)))
    b = F.matmul(q, copied)
    if grad_q is not None:
        b = F.add(b, grad_q)
    return mH(F.linalg_solve_triangular(r, mH(b), upper=True))


def _qr_derivative(grads, A, mode, results):
    """PyTorch's: square and tall matrices directly; wide ones as [X | Y] with X = QU square, Y = QV."""
    grad_q, grad_r = grads
    q, r = results
    m, n = A.shape[-2], A.shape[-1]
    if mode == "r":
        raise EmberError("linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when "
                         "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                         "through linalg.qr.")
    if mode == "complete" and m > n:
        raise EmberError("linalg.qr: The QR decomposition is not differentiable when mode='complete' and "
                         "nrows > ncols.")
    if m >= n:
        return _qr_square_backward(grad_q, grad_r, q, r)
    u = F.slice(r, -1, 0, m)
    y = F.slice(A, -1, m, n)
    grad_u = None if grad_r is None else F.slice(grad_r, -1, 0, m)
    grad_v = None if grad_r is None else F.slice(grad_r, -1, m, n)
    if grad_v is not None:
        shifted = F.matmul(y, mH(grad_v))
        grad_q = shifted if grad_q is None else F.add(grad_q, shifted)
    grad_x = _qr_square_backward(grad_q, grad_u, q, u)
    grad_y = F.zeros_like(y) if grad_v is None else F.matmul(q, grad_v)
    return F.cat([grad_x, grad_y], -1)


def _qr_reference(a, mode="reduced"):
    if mode == "r":
        return np.zeros((0,), a.dtype), np.linalg.qr(a, mode="r")
    return tuple(np.linalg.qr(a, mode=mode))


def _qr_samples(make, dtype):
    yield Sample((well_conditioned(make, (4, 3)),), note="tall, reduced")
    yield Sample((well_conditioned(make, (2, 3, 3)), "complete"), note="batched square, complete")
    yield Sample((well_conditioned(make, (2, 4)),), note="wide")


defop("linalg_qr(Tensor A, str mode='reduced')", "linalg", batch="trailing",
      promotion=floating_outputs("f", "f"), dtypes="float+complex",
      meta=_qr_meta, normalize=_qr_normalize, outputs=("Q", "R"), derivative=_qr_derivative,
      reference=_qr_reference, samples=_qr_samples, method=False, optional_kernel=True,
      doc="A = QR with orthonormal (unitary) columns in Q and upper-triangular R; mode 'reduced' (k = min(m, n) "
          "columns), 'complete' (Q square) or 'r' (R only, Q empty)")


# -- SVD --------------------------------------------------------------------------------------------

def _svd_meta(a, full_matrices=True):
    s = matrix_shape("linalg_svd", a)
    m, n = s[-2:]
    k = min(m, n)
    batch = s[:-2]
    if full_matrices:
        return batch + (m, m), batch + (k,), batch + (n, n)
    return batch + (m, k), batch + (k,), batch + (k, n)


def _skew(x):
    """x - x^H: skew-symmetric (skew-Hermitian) part, doubled."""
    return F.sub(x, mH(x))


def _svd_derivative(grads, A, results):
    """PyTorch's svd_backward, on the first k = min(m, n) singular vectors; complex matrices add the imaginary
    diagonal of U^H gU over 2S."""
    grad_u, grad_s, grad_vh = grads
    u, s, vh = results
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    u, vh = F.slice(u, -1, 0, k), F.slice(vh, -2, 0, k)
    grad_u = None if grad_u is None else F.slice(grad_u, -1, 0, k)
    grad_vh = None if grad_vh is None else F.slice(grad_vh, -2, 0, k)
    if grad_u is None and grad_vh is None:
        if grad_s is None:
            return F.zeros_like(A)
        return F.matmul(F.mul(u, F.unsqueeze(grad_s, -2)), vh)
    s_row, s_col = F.unsqueeze(s, -2), F.unsqueeze(s, -1)
    squares = F.mul(s, s)
    gaps = F.sub(F.unsqueeze(squares, -2), F.unsqueeze(squares, -1))
    gaps = F.add(gaps, F.eye(k, dtype=s.dtype, device=s.device))  # 1 on the diagonal, where skew parts are 0
    inner = F.zeros_like(gaps)
    u_skew = None if grad_u is None else _skew(F.matmul(mH(u), grad_u))
    v_skew = None if grad_vh is None else _skew(F.matmul(vh, mH(grad_vh)))
    if u.dtype.is_complex:
        _check_svd_phases(u_skew, v_skew)
    if grad_u is not None:
        inner = F.add(inner, F.mul(u_skew, s_row))
    if grad_vh is not None:
        inner = F.add(inner, F.mul(s_col, v_skew))
    inner = F.div(inner, gaps)
    if grad_s is not None:
        inner = F.add(inner, diag_embed(grad_s))
    if u.dtype.is_complex and grad_u is not None and grad_vh is not None:
        inner = F.add(inner, diag_embed(F.div(diag_of(u_skew), F.mul(s, 2.0))))
    if m > n and grad_u is not None:
        scaled = F.div(grad_u, s_row)
        outer = F.sub(F.add(F.matmul(u, inner), scaled), F.matmul(u, F.matmul(mH(u), scaled)))
        return F.matmul(outer, vh)
    if m < n and grad_vh is not None:
        scaled = F.div(grad_vh, s_col)
        outer = F.sub(F.add(F.matmul(inner, vh), scaled), F.matmul(F.matmul(scaled, mH(vh)), vh))
        return F.matmul(u, outer)
    return F.matmul(u, F.matmul(inner, vh))


def _check_svd_phases(u_skew, v_skew) -> None:
    """PyTorch's: a loss that ignores the phases has Im(diag(U^H gU)) = -Im(diag(V^H gV))."""
    parts = [F.imag(diag_of(x)) for x in (u_skew, v_skew) if x is not None]
    check_phase_invariance("svd_backward", parts[0] if len(parts) == 1 else F.add(*parts), "singular vectors",
                           "phase term")


def _svd_reference(a, full_matrices=True):
    return tuple(np.linalg.svd(a, full_matrices=full_matrices))


def _svd_samples(make, dtype):
    # real singular vectors are unique up to sign, which LAPACK keeps fixed near a matrix with distinct singular
    # values: finite differences of U and Vh are then defined (the full-matrices columns beyond k are not)
    yield Sample((make((4, 3)), False), note="tall, reduced")
    yield Sample((make((2, 2, 3)), False), note="batched wide")
    yield Sample((make((3, 3)),), note="square, full")


defop("linalg_svd(Tensor A, bool full_matrices=True)", "linalg", batch="trailing",
      promotion=floating_outputs("f", "r", "f"),
      dtypes="float+complex", meta=_svd_meta, outputs=("U", "S", "Vh"), derivative=_svd_derivative,
      reference=_svd_reference, samples=_svd_samples, method=False, optional_kernel=True,
      gauge=Gauge("S", (("U", -1), ("Vh", -2))),
      doc="A = U diag(S) Vh, singular values (real) in descending order; derivatives hold for gauge-invariant losses")


# -- symmetric eigendecomposition -------------------------------------------------------------------

def _eigh_normalize(op, args):
    if args["UPLO"] not in ("L", "U"):
        raise ArgumentError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {args['UPLO']}")


def _eigh_meta(a, UPLO="L"):
    s = matrix_shape("linalg_eigh", a, square=True)
    return s[:-1], s


def _eigh_derivative(grads, results):
    """gA = V (diag(gL) + offdiag(skew(V^H gV)) / 2 / E) V^H with E[i, j] = L[j] - L[i] (PyTorch's)."""
    grad_values, grad_vectors = grads
    values, vectors = results
    if grad_vectors is None:
        inner = diag_embed(grad_values) if grad_values is not None else F.zeros_like(vectors)
    else:
        n = values.shape[-1]
        gaps = F.sub(F.unsqueeze(values, -2), F.unsqueeze(values, -1))
        gaps = F.add(gaps, F.eye(n, dtype=values.dtype, device=values.device))
        product = F.matmul(mH(vectors), grad_vectors)
        if vectors.dtype.is_complex:
            check_phase_invariance("linalg_eigh_backward", F.imag(diag_of(product)))
        inner = F.div(F.mul(_skew(product), 0.5), gaps)
        if grad_values is not None:
            if vectors.dtype.is_complex:  # gL replaces the diagonal: i Im(V^H gV), the gauge's direction
                inner = F.sub(inner, diag_embed(diag_of(inner)))
            inner = F.add(inner, diag_embed(grad_values))
    return F.matmul(vectors, F.matmul(inner, mH(vectors)))


def _eigh_reference(a, UPLO="L"):
    return tuple(np.linalg.eigh(a, UPLO=UPLO))


def _eigh_samples(make, dtype):
    # the differentiable sample second: complex dtypes take only the first two samples
    yield Sample((spd(make, 3),), gradcheck=False, note="symmetric input: PyTorch's symmetrized gradient")
    yield Sample((spd(make, 1, (2,)),), note=ONE_BY_ONE)
    yield Sample((spd(make, 2, (2,)), "U"), gradcheck=False, note="batched, upper triangle")


defop("linalg_eigh(Tensor A, str UPLO='L')", "linalg", batch="trailing",
      promotion=floating_outputs("r", "f"), dtypes="float+complex",
      torch_keywords={"input": "A"},
      meta=_eigh_meta, normalize=_eigh_normalize, outputs=("eigenvalues", "eigenvectors"),
      derivative=_eigh_derivative, reference=_eigh_reference, samples=_eigh_samples, method=False,
      optional_kernel=True, gauge=Gauge("eigenvalues", (("eigenvectors", -1),)),
      doc="eigenvalues (real, ascending) and orthonormal eigenvectors of symmetric (Hermitian) matrices, reading one "
          "triangle; "
          "derivatives hold for gauge-invariant losses")


# -- LU ---------------------------------------------------------------------------------------------

def _lu_factor_meta(a, pivot=True):
    s = matrix_shape("linalg_lu_factor_ex", a)
    return s, s[:-2] + (min(s[-2:]),), s[:-2]


def _pivots_meta(pivots, m):
    s = shape(pivots)
    if not s or s[-1] > m:
        raise ShapeError(f"lu_pivots_to_permutation: expected pivots of shape (*, k) with k <= m = {m}, got {s}")
    return s[:-1] + (m,)


def pivots_to_permutation_reference(pivots, m):
    flat = pivots.reshape((-1, pivots.shape[-1])) if pivots.ndim else pivots.reshape((1, 0))
    perms = np.tile(np.arange(m), (flat.shape[0], 1))
    for perm, swaps in zip(perms, flat):
        for i, j in enumerate(swaps - 1):
            perm[i], perm[j] = perm[j], perm[i]
    return perms.reshape(pivots.shape[:-1] + (m,))


def _pivots_samples(make, dtype):
    for size in ((3, 3), (2, 4, 4), (4, 2)):
        pivots = F.linalg_lu_factor_ex(make(size, dtype=float32))[1]
        yield Sample((F.to_dtype(pivots, make(()).dtype), size[-2]))  # in the dtype under test, refused ones too


defop("lu_pivots_to_permutation(Index pivots, int m)", "linalg", batch="trailing",
      promotion=rules.to_int64, dtypes="int",
      meta=_pivots_meta, reference=pivots_to_permutation_reference, samples=_pivots_samples, differentiable=False,
      method=False, optional_kernel=True,
      doc="the row order perm with A[..., perm, :] = L U from LU's 1-based sequential row swaps (a loop over the "
          "swaps: a primitive, since a composite would dispatch several ops per swap)")


def _lu_square_backward(grad_l, grad_u, lower, upper):
    """B = LU, square: gB = L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H."""
    phi = F.add(F.tril(F.matmul(mH(lower), grad_l), -1), F.triu(F.matmul(grad_u, mH(upper))))
    left = F.linalg_solve_triangular(mH(lower), phi, upper=True, unitriangular=True)
    return F.linalg_solve_triangular(mH(upper), left, upper=False, left=False)


def _lu_factor_derivative(grads, A, results):
    """PyTorch's LU backward on B = P^T A: square directly; a tall matrix's extra rows L2 = B2 U^-1 and a wide
    one's extra columns U2 = L^-1 B2 first pass their share on to the square factors."""
    grad = grads[0]
    if grad is None:
        return F.zeros_like(A)
    lu, pivots = results[0], results[1]
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    square = F.slice(F.slice(lu, -2, 0, k), -1, 0, k)
    lower = F.add(F.tril(square, -1), F.eye(k, dtype=lu.dtype, device=lu.device))
    upper = F.triu(square)
    grad_l = F.tril(F.slice(F.slice(grad, -2, 0, k), -1, 0, k), -1)
    grad_u = F.triu(F.slice(F.slice(grad, -2, 0, k), -1, 0, k))
    if m > n:
        lower2, grad_l2 = F.slice(lu, -2, k, m), F.slice(grad, -2, k, m)
        grad_b2 = F.linalg_solve_triangular(mH(upper), grad_l2, upper=False, left=False)
        grad_u = F.sub(grad_u, F.triu(F.matmul(mH(lower2), grad_b2)))
        grad_b = F.cat([_lu_square_backward(grad_l, grad_u, lower, upper), grad_b2], -2)
    elif m < n:
        upper2, grad_u2 = F.slice(lu, -1, k, n), F.slice(grad, -1, k, n)
        grad_b2 = F.linalg_solve_triangular(mH(lower), grad_u2, upper=True, unitriangular=True)
        grad_l = F.sub(grad_l, F.tril(F.matmul(grad_b2, mH(upper2)), -1))
        grad_b = F.cat([_lu_square_backward(grad_l, grad_u, lower, upper), grad_b2], -1)
    else:
        grad_b = _lu_square_backward(grad_l, grad_u, lower, upper)
    return permute_rows(grad_b, permutation_of(pivots, m), inverse=True)


def lu_factor_reference(a, pivot=True):
    """LAPACK's getrf through SciPy (batched), pivots 1-based as LAPACK and PyTorch give them."""
    import scipy.linalg
    lu, pivots = scipy.linalg.lu_factor(a, check_finite=False)
    return lu, (pivots + 1).astype(np.int32), np.zeros(a.shape[:-2], np.int32)


def _lu_samples(make, dtype):
    yield Sample((well_conditioned(make, (3, 3)),), note="square")
    yield Sample((make((2, 4, 4)),), note="batched, pivoting")
    yield Sample((well_conditioned(make, (4, 2)),), note="tall")
    yield Sample((well_conditioned(make, (2, 3)),), note="wide")


defop("linalg_lu_factor_ex(Tensor A, *, bool pivot=True)", "linalg", batch="trailing",
      promotion=floating_outputs("f", "i", "i"),
      dtypes="float+complex", meta=_lu_factor_meta, outputs=("LU", "pivots", "info"), derivative=_lu_factor_derivative,
      reference=lu_factor_reference, samples=_lu_samples, method=False, optional_kernel=True,
      doc="LU with partial pivoting, packed as LAPACK's getrf: L (unit diagonal) below the diagonal, U on and "
          "above it, 1-based row swaps in pivots, and per matrix the first zero pivot's 1-based index in info")


# -- triangular solve -------------------------------------------------------------------------------

def _solve_triangular_meta(A, B, upper, left=True, unitriangular=False):
    a = matrix_shape("linalg_solve_triangular", A, square=True)
    b = matrix_shape("linalg_solve_triangular", B)
    from ...schema.meta import broadcast_shapes
    batch = broadcast_shapes("linalg.solve_triangular", a[:-2], b[:-2])
    inner = b[-2] if left else b[-1]
    if inner != a[-1]:
        side = "rows" if left else "columns"
        raise ShapeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({a[-2]}x{a[-1]} and {b[-2]}x{b[-1]}): B needs "
                         f"{a[-1]} {side}")
    return batch + b[-2:]


def _solve_triangular_b_derivative(grad, A, upper, left, unitriangular):
    return F.linalg_solve_triangular(mH(A), grad, upper=not upper, left=left, unitriangular=unitriangular)


def _solve_triangular_a_derivative(grad, A, upper, left, unitriangular, result):
    grad_b = _solve_triangular_b_derivative(grad, A, upper, left, unitriangular)
    full = F.neg(F.matmul(grad_b, mH(result)) if left else F.matmul(mH(result), grad_b))
    return _tril_or_triu(full, upper, 1 if unitriangular else 0)


def solve_triangular_reference(A, B, upper, left=True, unitriangular=False):
    a = np.triu(A) if upper else np.tril(A)
    if unitriangular:
        a = a - a * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    if left:
        return np.linalg.solve(a, B)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(B, -1, -2)), -1, -2)


def _solve_triangular_samples(make, dtype):
    a = well_conditioned(make, (3, 3))
    yield Sample((a, make((3, 2))), {"upper": True}, note="upper, left")
    yield Sample((a, make((2, 2, 3))), {"upper": False, "left": False}, note="lower, right, broadcast batch")
    yield Sample((well_conditioned(make, (2, 3, 3)), make((3, 1))), {"upper": False, "unitriangular": True},
                 note="unit diagonal")


defop("linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool left=True, bool unitriangular=False)",
      "linalg", batch="elementwise", torch_keywords={"input": "A"}, promotion=floating, dtypes="float+complex",
      meta=_solve_triangular_meta,
      derivative={"A": _solve_triangular_a_derivative, "B": _solve_triangular_b_derivative},
      reference=solve_triangular_reference, samples=_solve_triangular_samples, method=False, optional_kernel=True,
      doc="X with AX = B (left) or XA = B for triangular A, reading only A's upper or lower triangle")


# -- LDL^T (Bunch-Kaufman) --------------------------------------------------------------------------

def symmetric(make, n: int, batch: tuple = ()):
    """A symmetric, generally indefinite matrix (2 x 2 pivots happen) in the sample's dtype."""
    x = _sample_matrix(make, batch + (n, n))
    return F.to_dtype(F.add(x, mT(x)), make(()).dtype)


def _ldl_factor_meta(A, hermitian=False):
    s = matrix_shape("linalg_ldl_factor_ex", A, square=True)
    return s, s[:-1], s[:-2]


def ldl_routine(step: str, dtype, hermitian: bool):
    """LAPACK's ?sytrf/?sytrs (step "trf"/"trs") for dtype, or ?hetrf/?hetrs for Hermitian complex matrices."""
    import scipy.linalg  # the conformance suite's reference only: importing SciPy's linalg takes ember's import long
    kind = "he" if hermitian and np.dtype(dtype).kind == "c" else "sy"
    return scipy.linalg.get_lapack_funcs(kind + step, dtype=dtype)


def ldl_factor_reference(A, hermitian=False):
    """LAPACK's sytrf (hetrf) on the lower triangle, one matrix at a time, as PyTorch calls it."""
    n = A.shape[-1]
    routine = ldl_routine("trf", A.dtype, hermitian)
    pieces = [routine(matrix, lower=1) for matrix in A.reshape((-1, n, n))]
    batch = A.shape[:-2]
    return (np.stack([np.tril(p[0]) for p in pieces]).reshape(A.shape) if pieces else np.zeros(A.shape, A.dtype),
            np.stack([p[1] for p in pieces]).astype(np.int32).reshape(batch + (n,)) if pieces else
            np.zeros(batch + (n,), np.int32),
            np.array([p[2] for p in pieces], np.int32).reshape(batch))


defop("linalg_ldl_factor_ex(Tensor A, *, bool hermitian=False)", "linalg", batch="trailing",
      promotion=floating_outputs("f", "i", "i"),
      torch_keywords={"input": "A"},
      dtypes="float+complex", meta=_ldl_factor_meta, outputs=("LD", "pivots", "info"), reference=ldl_factor_reference,
      samples=lambda make, dtype: (Sample((symmetric(make, 4),)), Sample((symmetric(make, 3, (2,)),))),
      differentiable=False, method=False, optional_kernel=True,
      doc="A = L D L^T (L D L^H for hermitian=True) with Bunch-Kaufman pivoting (LAPACK's sytrf/hetrf, lower "
          "triangle): L below the diagonal and the "
          "1 x 1 and 2 x 2 blocks of D in LD, LAPACK's pivots (negative for a 2 x 2 block), and per matrix the "
          "1-based index of a zero in D in info. Not differentiable, as in PyTorch")


def _ldl_solve_meta(LD, pivots, B, hermitian=False):
    a, b = matrix_shape("linalg_ldl_solve", LD, square=True), matrix_shape("linalg_ldl_solve", B)
    if b[-2] != a[-1]:
        raise ShapeError(f"linalg.ldl_solve: Incompatible shapes of LD {a} and B {b}: B needs {a[-1]} rows")
    from ...schema.meta import broadcast_shapes
    return broadcast_shapes("linalg.ldl_solve", a[:-2], b[:-2]) + b[-2:]


def ldl_solve_reference(LD, pivots, B, hermitian=False):
    """LAPACK's sytrs (hetrs), one system at a time, LD and pivots broadcast against B's batch."""
    n = LD.shape[-1]
    batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2])
    factors = np.broadcast_to(LD, batch + LD.shape[-2:]).reshape((-1, n, n))
    swaps = np.broadcast_to(pivots, batch + pivots.shape[-1:]).reshape((-1, n))
    rights = np.broadcast_to(B, batch + B.shape[-2:]).reshape((-1,) + B.shape[-2:])
    routine = ldl_routine("trs", LD.dtype, hermitian)
    out = [routine(f, p, r, lower=1)[0] for f, p, r in zip(factors, swaps, rights)]
    return np.stack(out).reshape(batch + B.shape[-2:]) if out else np.zeros(batch + B.shape[-2:], B.dtype)


def _ldl_solve_samples(make, dtype):
    for batch, right in (((), (4, 2)), ((2,), (4, 1))):
        ld, pivots, _ = F.linalg_ldl_factor_ex(F.to_dtype(symmetric(make, 4, batch), float32))
        yield Sample((F.to_dtype(ld, make(()).dtype), pivots, make(right)))  # refused dtypes get samples too


defop("linalg_ldl_solve(Tensor LD, Index pivots, Tensor B, *, bool hermitian=False)", "linalg",
      promotion=floating, dtypes="float+complex", meta=_ldl_solve_meta, reference=ldl_solve_reference,
      samples=_ldl_solve_samples, differentiable=False, method=False, optional_kernel=True,
      doc="solves A X = B given linalg.ldl_factor's LD and pivots (LAPACK's sytrs). Not differentiable, as in "
          "PyTorch")
