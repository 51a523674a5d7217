"""Householder reflectors: products of them (orgqr), the QR factorization that stores them (geqrf), applying
them (ormqr), and torch.qr's older spelling.

Composites of Ember ops: a loop over the reflectors, each a rank-one update, batched over leading dims.
"""
from __future__ import annotations

import numpy as np

from ...schema.errors import ShapeError
from ...schema.meta import shape
from ...schema import Sample, defop
from ..namespace import F
from ..elementwise.complex_support import conj
from .matrices import floating, matrix_shape, mH


# -- Householder products ---------------------------------------------------------------------------

def _householder_product(A, tau):
    """Q = H_1 ... H_k with H_i = I - tau_i v_i v_i^H, v_i = (0, ..., 1, A[i+1:, i]): the first n columns."""
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    q = F.expand(F.eye(m, n, dtype=A.dtype, device=A.device), tuple(A.shape))
    for i in reversed(range(k)):
        below = F.slice(F.slice(A, -1, i, i + 1), -2, i + 1, m)
        ones = F.full(tuple(A.shape[:-2]) + (1, 1), 1.0, dtype=A.dtype, device=A.device)
        zeros = F.zeros(tuple(A.shape[:-2]) + (i, 1), dtype=A.dtype, device=A.device)
        v = F.cat([zeros, ones, below], -2)
        t = F.unsqueeze(F.unsqueeze(F.select(tau, -1, i), -1), -1)
        q = F.sub(q, F.mul(F.matmul(v, F.matmul(mH(v), q)), t))
    return q


def _householder_meta(A, tau, name="linalg.householder_product"):
    a, t = matrix_shape("linalg_householder_product", A), shape(tau)
    if a[-2] < a[-1]:
        raise ShapeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1] (shape {a})")
    if not t or t[-1] > a[-1] or t[:-1] != a[:-2]:
        raise ShapeError(f"{name}: tau must have shape {a[:-2]} + (k,) with k <= {a[-1]}, got {t}")
    return a


def _householder_reference(A, tau):
    m, n = A.shape[-2:]
    flat_a, flat_t = A.reshape((-1, m, n)), tau.reshape((-1, tau.shape[-1]))
    out = []
    for a, t in zip(flat_a, flat_t):
        q = np.eye(m)
        for i in range(len(t)):
            v = np.concatenate([np.zeros(i), [1.0], a[i + 1:, i]])
            q = q @ (np.eye(m) - t[i] * np.outer(v, np.conj(v)))
        out.append(q[:, :n])
    return np.stack(out).reshape(A.shape)


def _householder_samples(make, dtype):
    yield Sample((make((4, 3)), make((3,))))
    yield Sample((make((2, 3, 2)), make((2, 1))), note="batched, fewer reflectors")


defop("linalg_householder_product(Tensor A, Tensor tau)", "linalg", kind="composite", promotion=floating,
      torch_keywords={"input": "A"},
      dtypes="float+complex", meta=_householder_meta, composite=_householder_product, reference=_householder_reference,
      samples=_householder_samples, method=False,
      doc="the first n columns of the product of Householder reflectors stored as LAPACK's geqrf leaves them")
defop("orgqr(Tensor input, Tensor tau)", "linalg", kind="composite", promotion=floating, dtypes="float+complex",
      torch_keywords={"input2": "tau"},
      meta=lambda input, tau: _householder_meta(input, tau, "orgqr"), composite=_householder_product,
      reference=_householder_reference, samples=_householder_samples, doc="torch.orgqr: linalg.householder_product")


# -- geqrf and ormqr --------------------------------------------------------------------------------

def _reflector(alpha, tail):
    """LAPACK's larfg: (beta, tau, v) with (I - tau v v^H)^H (alpha; tail) = (beta; 0), beta real and v[0] = 1;
    tau = 0 (no reflection) where the column is (real alpha; 0) already."""
    if alpha.dtype.is_complex:
        real, imaginary = F.real(alpha), F.imag(alpha)
        sigma = F.sum(F.real(F.mul(conj(tail), tail)), [-2, -1], True)
        norm = F.sqrt(F.add(F.add(F.mul(real, real), F.mul(imaginary, imaginary)), sigma))
        nothing = F.logical_and(F.eq(sigma, 0), F.eq(imaginary, 0))
    else:
        real, sigma = alpha, F.sum(F.mul(tail, tail), [-2, -1], True)
        norm = F.sqrt(F.add(F.mul(alpha, alpha), sigma))
        nothing = F.eq(sigma, 0)
    beta = F.where(nothing, real, F.neg(F.mul(F.where(F.ge(real, 0), 1.0, -1.0), norm)))
    beta = F.to_dtype(beta, alpha.dtype) if alpha.dtype.is_complex else beta
    safe = F.where(nothing, 1.0, F.sub(alpha, beta))
    tau = F.where(nothing, 0.0, F.div(F.sub(beta, alpha), F.where(nothing, 1.0, beta)))
    return beta, tau, F.cat([F.add(F.mul(alpha, 0), 1), F.div(tail, safe)], -2)


def _geqrf(input):
    """Householder QR as LAPACK's geqrf stores it: R on and above the diagonal, reflector i's tail below it."""
    m, n = input.shape[-2], input.shape[-1]
    a, taus = input, []
    for i in range(min(m, n)):
        column = F.slice(F.slice(a, -1, i, i + 1), -2, i, m)  # (*, m - i, 1)
        beta, tau, v = _reflector(F.slice(column, -2, 0, 1), F.slice(column, -2, 1, m - i))
        block = F.slice(a, -2, i, m)
        trailing = F.slice(block, -1, i + 1, n)  # H^H acts on the columns not yet reduced
        trailing = F.sub(trailing, F.mul(F.matmul(v, F.matmul(mH(v), trailing)), conj(tau)))
        stored = F.cat([F.slice(block, -1, 0, i), F.cat([beta, F.slice(v, -2, 1, m - i)], -2), trailing], -1)
        a = F.cat([F.slice(a, -2, 0, i), stored], -2)
        taus.append(F.reshape(tau, tuple(input.shape[:-2]) + (1,)))
    tau = F.cat(taus, -1) if taus else F.zeros(tuple(input.shape[:-2]) + (0,), dtype=input.dtype,
                                               device=input.device)
    return a, tau


def _geqrf_meta(input):
    s = matrix_shape("geqrf", input)
    return s, s[:-2] + (min(s[-2:]),)


def _geqrf_reference(input):
    import scipy.linalg.lapack as lapack
    m, n = input.shape[-2:]
    geqrf = lapack.get_lapack_funcs("geqrf", dtype=input.dtype)
    pieces = [geqrf(matrix)[:2] for matrix in input.reshape((-1, m, n))]
    batch = input.shape[:-2]
    return (np.stack([p[0] for p in pieces]).reshape(input.shape),
            np.stack([p[1] for p in pieces]).reshape(batch + (min(m, n),)))


defop("geqrf(Tensor input)", "linalg", kind="composite",
      promotion=lambda rt, op, args: (floating(rt, op, args)[0], (floating(rt, op, args)[0],) * 2),
      dtypes="float+complex", meta=_geqrf_meta, composite=_geqrf, outputs=("a", "tau"), reference=_geqrf_reference,
      differentiable=False,
      samples=lambda make, dtype: (Sample((make((4, 3)),)), Sample((make((2, 3, 4)),), note="batched, wide")),
      doc="QR as Householder reflectors (LAPACK's geqrf layout; not differentiable, as in PyTorch)")


def _full_q(input, tau):
    """The whole m x m product of the reflectors (orgqr gives its first n columns)."""
    m, n = input.shape[-2], input.shape[-1]
    batch = tuple(input.shape[:-2])
    if n < m:
        input = F.cat([input, F.zeros(batch + (m, m - n), dtype=input.dtype, device=input.device)], -1)
    return _householder_product(input if n <= m else F.slice(input, -1, 0, m), tau)


def _ormqr(input, tau, other, left=True, transpose=False):
    q = _full_q(input, tau)
    q = mH(q) if transpose else q
    return F.matmul(q, other) if left else F.matmul(other, q)


def _ormqr_meta(input, tau, other, left=True, transpose=False):
    a, c = matrix_shape("ormqr", input), matrix_shape("ormqr", other)
    t = shape(tau)
    if not t or t[-1] > min(a[-2], a[-1]) or t[:-1] != a[:-2]:
        raise ShapeError(f"ormqr: tau must have shape {a[:-2]} + (k,) with k <= {min(a[-2], a[-1])}, got {t}")
    if (c[-2] if left else c[-1]) != a[-2]:
        raise ShapeError(f"ormqr: other's {'rows' if left else 'columns'} must number input.shape[-2] = {a[-2]}, "
                         f"got shape {c}")
    return c


def _ormqr_reference(input, tau, other, left=True, transpose=False):
    m = input.shape[-2]
    padded = np.concatenate([input, np.zeros(input.shape[:-1] + (max(m - input.shape[-1], 0),))], -1)[..., :m]
    q = _householder_reference(padded, tau)
    q = np.conj(np.swapaxes(q, -1, -2)) if transpose else q
    return q @ other if left else other @ q


defop("ormqr(Tensor input, Tensor tau, Tensor other, bool left=True, bool transpose=False)", "linalg",
      torch_keywords={"input2": "tau", "input3": "other"},
      kind="composite", promotion=floating, dtypes="float+complex", meta=_ormqr_meta, composite=_ormqr,
      reference=_ormqr_reference,
      samples=lambda make, dtype: (Sample((make((4, 3)), make((3,)), make((4, 2)))),
                                   Sample((make((3, 3)), make((2,)), make((2, 3)), False, True),
                                          note="right, transposed")),
      doc="multiplies by the Q of geqrf's reflectors (or its conjugate transpose), from the left or right")


def _legacy_qr(input, some=True):
    return F.linalg_qr(input, "reduced" if some else "complete")


def _legacy_qr_meta(input, some=True):
    s = matrix_shape("qr", input)
    m, n = s[-2:]
    k = min(m, n) if some else m
    return s[:-2] + (m, k), s[:-2] + (k, n)


defop("qr(Tensor input, bool some=True)", "linalg", kind="composite",
      promotion=lambda rt, op, args: (floating(rt, op, args)[0], (floating(rt, op, args)[0],) * 2),
      dtypes="float+complex", meta=_legacy_qr_meta, composite=_legacy_qr, outputs=("Q", "R"),
      reference=lambda input, some=True: tuple(np.linalg.qr(input, mode="reduced" if some else "complete")),
      samples=lambda make, dtype: (Sample((make((4, 3)),)), Sample((make((3, 3)), False))),
      doc="torch.qr (deprecated in PyTorch for linalg.qr): reduced (some) or complete Q and R")
