"""torch.linalg's functions beyond solving: norms, spectral quantities, powers and exponentials, products.

All composites of the decompositions (ops/decompositions.py) and Ember ops: they run and differentiate on every
backend. The spectral ones (pinv, matrix_rank, cond, lstsq, nuclear and 2-norms) go through the SVD, whose
derivative they use with gauge-invariant losses only, so it is well defined.
"""
from __future__ import annotations

import math

import numpy as np

from ...execution import links
from ...execution.dispatcher import checking_results
from ...schema.dtypes import float32, float64, int64
from ...schema.errors import ArgumentError, DtypeError, ShapeError
from ...schema.meta import broadcast_shapes, shape
from ...schema import Gauge, Sample, defop
from ..namespace import F
from .decompositions import spd, well_conditioned
from ._shared import _inv
from . import linalg_eig  # noqa: F401  (declares linalg_eig and linalg_eigvals with the spectral functions)
from .matrices import (conj, eye_like, float_dtype, floating, floating_outputs, floating_real, matrix_shape, mH,
                       reads_results, wrap_dim as _wrap)


# -- spectral ---------------------------------------------------------------------------------------

def _eigvalsh_reference(A, UPLO="L"):
    return np.linalg.eigvalsh(A, UPLO=UPLO)


defop("linalg_eigvalsh(Tensor A, str UPLO='L')", "linalg", kind="composite", promotion=floating_real,
      dtypes="float+complex",
      torch_keywords={"input": "A"},
      meta=lambda A, UPLO="L": matrix_shape("linalg_eigvalsh", A, square=True)[:-1],
      composite=lambda A, UPLO="L": F.linalg_eigh(A, UPLO)[0], reference=_eigvalsh_reference,
      samples=lambda make, dtype: (Sample((spd(make, 3),), gradcheck=False),
                                   Sample((spd(make, 1, (3,)),), note="1 x 1"),
                                   Sample((spd(make, 2, (2,)), "U"), gradcheck=False)),
      method=False, doc="eigenvalues (real) of symmetric (Hermitian) matrices, ascending")


def _svdvals_meta(A, driver=None):
    s = matrix_shape("linalg_svdvals", A)
    return s[:-2] + (min(s[-2:]),)


defop("linalg_svdvals(Tensor A, *, str? driver=None)", "linalg", kind="composite", promotion=floating_real,
      dtypes="float+complex", meta=_svdvals_meta, composite=lambda A, driver=None: F.linalg_svd(A, False)[1],
      reference=lambda A, driver=None: np.linalg.svd(A, compute_uv=False),
      samples=lambda make, dtype: (Sample((make((4, 3)),)), Sample((make((2, 2, 5)),))), method=False,
      doc="singular values, descending (driver is for cuSOLVER and ignored elsewhere, as in PyTorch)")


def _tolerance(values, largest, m, n, atol, rtol):
    """max(atol, rtol * largest singular value), PyTorch's defaults: rtol = eps * max(m, n) unless atol > 0
    (``values`` real: singular values, or eigenvalues' magnitudes)."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(np.dtype(values.dtype.name)).eps) * max(m, n)
    return F.maximum(F.mul(largest, rtol), F.full((), float(atol or 0.0), dtype=values.dtype, device=values.device))


def _pinv(A, atol=None, rtol=None, hermitian=False):
    m, n = A.shape[-2], A.shape[-1]
    if hermitian:
        values, vectors = F.linalg_eigh(A)
        size = F.abs(values)
        threshold = _tolerance(size, F.amax(size, -1, True), m, n, atol, rtol)
        keep = F.gt(size, threshold)
        inverse = F.where(keep, F.reciprocal(F.where(keep, values, 1.0)), 0.0)
        return F.matmul(F.mul(vectors, F.unsqueeze(inverse, -2)), mH(vectors))
    u, s, vh = F.linalg_svd(A, False)
    threshold = _tolerance(s, F.amax(s, -1, True) if s.shape[-1] else s, m, n, atol, rtol)
    keep = F.gt(s, threshold)
    inverse = F.where(keep, F.reciprocal(F.where(keep, s, 1.0)), 0.0)
    return F.matmul(F.mul(mH(vh), F.unsqueeze(inverse, -2)), mH(u))


def _pinv_meta(A, atol=None, rtol=None, hermitian=False):
    s = matrix_shape("linalg_pinv", A, square=hermitian)
    return s[:-2] + (s[-1], s[-2])


def _pinv_reference(A, atol=None, rtol=None, hermitian=False):
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(A.dtype).eps * max(m, n)
    u, s, vh = np.linalg.svd(A, full_matrices=False)
    threshold = np.maximum(rtol * s.max(-1, keepdims=True), atol or 0.0)
    inverse = np.where(s > threshold, 1 / np.where(s > threshold, s, 1), 0)
    return np.conj(np.swapaxes(vh, -1, -2)) @ (inverse[..., None] * np.conj(np.swapaxes(u, -1, -2)))


def _pinv_samples(make, dtype):
    yield Sample((make((4, 3)),), note="tall")
    yield Sample((make((2, 2, 3)),), {"rtol": 0.01}, note="batched wide, rtol")
    yield Sample((spd(make, 3),), {"hermitian": True}, gradcheck=False, note="symmetric, through eigh")


defop("linalg_pinv(Tensor A, *, float? atol=None, float? rtol=None, bool hermitian=False)", "linalg",
      torch_keywords={"input": "A"},
      kind="composite", promotion=floating, dtypes="float+complex", meta=_pinv_meta, composite=_pinv,
      reference=_pinv_reference, samples=_pinv_samples, method=False,
      doc="the Moore-Penrose pseudo-inverse; singular values at or below max(atol, rtol * largest) count as zero")
defop("pinverse(Tensor input, float rcond=1e-15)", "linalg", kind="composite", promotion=floating,
      dtypes="float+complex",
      meta=lambda input, rcond=1e-15: _pinv_meta(input), composite=lambda input, rcond=1e-15: _pinv(input, rtol=rcond),
      reference=lambda input, rcond=1e-15: _pinv_reference(input, rtol=rcond),
      samples=lambda make, dtype: (Sample((make((4, 3)),)), Sample((make((2, 2, 3)), 0.01))),
      doc="torch.pinverse: linalg.pinv with rtol=rcond")


def _matrix_rank(A, atol=None, rtol=None, hermitian=False):
    m, n = A.shape[-2], A.shape[-1]
    values = F.abs(F.linalg_eigvalsh(A)) if hermitian else F.linalg_svdvals(A)
    largest = F.amax(values, -1, True) if values.shape[-1] else values
    return F.sum(F.gt(values, _tolerance(values, largest, m, n, atol, rtol)), -1, dtype=int64)


def _matrix_rank_reference(A, atol=None, rtol=None, hermitian=False):
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(A.dtype).eps * max(m, n)
    s = np.linalg.svd(A, compute_uv=False)
    return np.sum(s > np.maximum(rtol * s.max(-1, keepdims=True), atol or 0.0), -1).astype(np.int64)


def _low_rank(make, m, n, rank):
    """An m x n matrix of the given rank (a product of float32 factors, in the sample dtype)."""
    product = F.matmul(make((m, rank), dtype=float32), make((rank, n), dtype=float32))
    return F.to_dtype(product, make(()).dtype)


defop("linalg_matrix_rank(Tensor A, *, float? atol=None, float? rtol=None, bool hermitian=False)", "linalg",
      torch_keywords={"input": "A"},
      kind="composite", promotion=lambda rt, op, args: (floating(rt, op, args)[0], int64), dtypes="float+complex",
      meta=lambda A, atol=None, rtol=None, hermitian=False: matrix_shape("linalg_matrix_rank", A)[:-2],
      composite=_matrix_rank, reference=_matrix_rank_reference, differentiable=False, method=False,
      samples=lambda make, dtype: (Sample((make((4, 3)),)), Sample((_low_rank(make, 4, 4, 2),), note="rank 2"),
                                   Sample((_low_rank(make, 3, 3, 1),), {"atol": 1e-3, "hermitian": False})),
      doc="the number of singular values above max(atol, rtol * largest)")


def _lstsq_driver(driver):
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise ArgumentError(f"linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got "
                            f"{driver!r}")
    return driver


def _lstsq(A, B, rcond=None, driver=None):
    driver = _lstsq_driver(driver)
    m, n = A.shape[-2], A.shape[-1]
    if rcond is None or rcond < 0:
        rcond = float(np.finfo(np.dtype(A.dtype.name)).eps) * max(m, n)
    solution = F.matmul(_pinv(A, rtol=rcond), B)
    empty = F.zeros((0,), dtype=A.dtype.to_real(), device=A.device)
    with links.recorder.no_grad():  # PyTorch differentiates the solution and residuals only
        rank = _matrix_rank(A, rtol=rcond) if driver != "gels" else F.zeros((0,), dtype=int64, device=A.device)
        values = F.linalg_svdvals(A) if driver in ("gelsd", "gelss") else empty
        with checking_results():  # only which outputs are empty, as LAPACK's drivers report them
            full_rank = m > n and driver != "gelsy" and bool(F.all(F.eq(_matrix_rank(A, rtol=rcond), n)).item())
    errors = F.sub(F.matmul(A, solution), B)
    residuals = F.sum(F.pow(F.abs(errors) if errors.dtype.is_complex else errors, 2), -2) if full_rank else empty
    return solution, residuals, rank, values


def _lstsq_meta(A, B, rcond=None, driver=None):
    driver = _lstsq_driver(driver)
    a, b = matrix_shape("linalg_lstsq", A), matrix_shape("linalg_lstsq", B)
    if a[-2] != b[-2]:
        raise ShapeError(f"linalg.lstsq: input.size(-2) should match other.size(-2), got shapes {a} and {b}")
    batch = broadcast_shapes("linalg.lstsq", a[:-2], b[:-2])
    m, n = a[-2:]
    residuals = batch + (b[-1],) if m > n and driver != "gelsy" else (0,)
    rank = a[:-2] if driver != "gels" else (0,)
    values = a[:-2] + (min(m, n),) if driver in ("gelsd", "gelss") else (0,)
    return batch + (n, b[-1]), residuals, rank, values


def _lstsq_promotion(rt, op, args):
    dt = float_dtype(op.name, rt)
    real = dt and dt.to_real()
    return dt, (dt, real, int64, real)


def _lstsq_reference(A, B, rcond=None, driver=None):
    driver = "gelsy" if driver is None else driver
    m, n = A.shape[-2:]
    rcond = np.finfo(A.dtype).eps * max(m, n) if rcond is None else rcond
    solution = _pinv_reference(A, rtol=rcond) @ B
    empty = np.zeros((0,), np.abs(A[..., :0, :0]).dtype)
    rank = _matrix_rank_reference(A, rtol=rcond) if driver != "gels" else np.zeros((0,), np.int64)
    values = np.linalg.svd(A, compute_uv=False) if driver in ("gelsd", "gelss") else empty
    residuals = np.sum(np.abs(A @ solution - B) ** 2, -2) if m > n and driver != "gelsy" else empty
    return solution, residuals, rank, values


def _lstsq_samples(make, dtype):
    yield Sample((make((5, 3)), make((5, 2))), note="overdetermined, gelsy: no residuals")
    yield Sample((make((2, 5, 3)), make((5, 1))), {"driver": "gelsd"}, gradcheck=False,
                 note="batched, residuals, singular values (not differentiable outputs, as in PyTorch)")
    yield Sample((make((4, 2)), make((4, 3))), {"driver": "gels"}, note="residuals")
    yield Sample((make((2, 4)), make((2, 2))), {"driver": "gels"}, note="underdetermined: minimum norm")


defop("linalg_lstsq(Tensor A, Tensor B, float? rcond=None, *, str? driver=None)", "linalg", kind="composite",
      torch_keywords={"input": "A", "b": "B"},
      normalize=reads_results,
      promotion=_lstsq_promotion, dtypes="float+complex", meta=_lstsq_meta, composite=_lstsq,
      outputs=("solution", "residuals", "rank", "singular_values"), reference=_lstsq_reference,
      samples=_lstsq_samples, method=False,
      doc="the minimum-norm least-squares solution of AX = B (through the SVD, for every driver), plus what the "
          "named LAPACK driver reports: residuals (m > n, full rank, not gelsy), rank (not gels), singular values "
          "(gelsd, gelss)")


# -- powers and exponentials ------------------------------------------------------------------------

def _matrix_power(A, n):
    if n < 0:
        A, n = _inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    return result if result is not None else F.add(F.mul(A, 0), eye_like(A))


def _matrix_power_reference(A, n):
    return np.linalg.matrix_power(A, n)


def _matrix_power_samples(make, dtype):
    yield Sample((make((3, 3)), 3))
    yield Sample((make((2, 2, 2)), 0), note="identity")
    if dtype in (float32, float64):  # the inverse is LU's: single and double precision only
        yield Sample((well_conditioned(make, (3, 3)), -2), note="inverse squared")


def _numeric(rt, op, args):
    if rt.kind == "bool":
        raise DtypeError(f"{op.name}: not supported for dtype bool")
    return rt, rt


defop("linalg_matrix_power(Tensor A, int n)", "linalg", kind="composite", promotion=_numeric, dtypes="numeric+complex",
      torch_keywords={"input": "A"},
      normalize=reads_results,
      meta=lambda A, n: matrix_shape("linalg_matrix_power", A, square=True), composite=_matrix_power,
      reference=_matrix_power_reference, samples=_matrix_power_samples, method=False,
      doc="A^n by repeated squaring; n < 0 inverts first (float only)")
defop("matrix_power(Tensor input, int n)", "linalg", kind="composite", promotion=_numeric, dtypes="numeric+complex",
      normalize=reads_results,
      meta=lambda input, n: matrix_shape("matrix_power", input, square=True), composite=_matrix_power,
      reference=_matrix_power_reference, samples=_matrix_power_samples, doc="torch.matrix_power: linalg.matrix_power")


_TAYLOR_TERMS = 18  # with ||A / 2^s||_1 <= 1/2 the remainder is below 2^-19 / 19!, far under float64's eps
#: squarings at most: enough for every matrix whose exponential is finite in float64 (1-norm up to 2^15)
_MAX_SQUARINGS = 16


def _matrix_exp(A):
    """Scaling and squaring: a Taylor polynomial of A / 2^s, squared s times, s from each matrix's 1-norm.
    The squarings are selected per matrix rather than counted on the host, so the op reads no values."""
    matrix_shape("linalg_matrix_exp", A, square=True)
    if A.numel() == 0:
        return F.add(A, 0.0)
    norms = F.unsqueeze(F.amax(F.sum(F.abs(A), -2), -1, True), -1)  # (*, 1, 1)
    steps = F.clamp(F.ceil(F.log2(F.mul(norms, 2.0))), 0.0, float(_MAX_SQUARINGS))
    scaled = F.mul(A, F.exp(F.mul(steps, -math.log(2.0))))
    term = F.add(F.mul(scaled, 0.0), eye_like(A))
    total = term
    for k in range(1, _TAYLOR_TERMS + 1):
        term = F.mul(F.matmul(term, scaled), 1.0 / k)
        total = F.add(total, term)
    for step in range(_MAX_SQUARINGS):
        total = F.where(F.gt(steps, step), F.matmul(total, total), total)
    return total


#: each squaring doubles the float32 rounding of the Taylor sum (SciPy's reference is float64)
_SQUARING_TOLERANCES = {"float32": (1e-4, 1e-4)}


def _matrix_exp_reference(A):
    import scipy.linalg
    return scipy.linalg.expm(A)


def _matrix_exp_samples(make, dtype):
    yield Sample((make((3, 3)),))
    yield Sample((make((2, 3, 3), low=-3.0, high=3.0),), note="batched, scaled and squared")


defop("linalg_matrix_exp(Tensor A)", "linalg", kind="composite", promotion=floating, dtypes="float+complex",
      torch_keywords={"input": "A"},
      meta=lambda A: matrix_shape("linalg_matrix_exp", A, square=True), composite=_matrix_exp,
      reference=_matrix_exp_reference, samples=_matrix_exp_samples, method=False, tolerances=_SQUARING_TOLERANCES,
      doc="the matrix exponential, by scaling and squaring")
defop("matrix_exp(Tensor A)", "linalg", kind="composite", promotion=floating, dtypes="float+complex",
      torch_keywords={"input": "A"},
      meta=lambda A: matrix_shape("matrix_exp", A, square=True), composite=_matrix_exp,
      reference=_matrix_exp_reference, samples=_matrix_exp_samples, tolerances=_SQUARING_TOLERANCES,
      doc="torch.matrix_exp: linalg.matrix_exp")


# -- products ---------------------------------------------------------------------------------------

def _cross(input, other, dim=-1):
    out_shape = broadcast_shapes("linalg.cross", tuple(input.shape), tuple(other.shape))
    a, b = F.expand(input, out_shape), F.expand(other, out_shape)

    def part(x, i):
        return F.slice(x, dim, i, i + 1)

    def component(i):
        j, k = (i + 1) % 3, (i + 2) % 3
        return F.sub(F.mul(part(a, j), part(b, k)), F.mul(part(a, k), part(b, j)))
    pieces = [component(i) for i in range(3)]
    return F.cat(pieces, dim)


def _cross_meta(input, other, dim=-1, name="linalg.cross"):
    if len(shape(input)) != len(shape(other)):
        raise ShapeError(f"{name}: inputs must have the same number of dimensions, got shapes {shape(input)} and "
                         f"{shape(other)}")
    out = broadcast_shapes(name, shape(input), shape(other))
    if dim is None:
        dim = next((i for i, n in enumerate(out) if n == 3), None)
        if dim is None:
            raise ShapeError(f"{name}: no dimension of size 3 in input (shape {out})")
    if not out or out[_wrap(dim, len(out), name)] != 3 or shape(input)[dim] != 3 or shape(other)[dim] != 3:
        raise ShapeError(f"{name}: inputs dimension {dim} must have length 3. Got {shape(input)} and {shape(other)}")
    return out


def _cross_reference(input, other, dim=-1):
    if dim is None:
        dim = next(i for i, n in enumerate(np.broadcast_shapes(input.shape, other.shape)) if n == 3)
    return np.cross(input, other, axis=dim)


def _cross_samples(make, dtype):
    yield Sample((make((4, 3)), make((4, 3))))
    yield Sample((make((3, 2)), make((3, 1))), {"dim": 0}, note="dim 0, broadcast")


def _legacy_cross(input, other, dim=None):
    if dim is None:
        dim = next(i for i, n in enumerate(broadcast_shapes("cross", tuple(input.shape), tuple(other.shape)))
                   if n == 3)
    return _cross(input, other, dim)


defop("linalg_cross(Tensor input, Tensor other, *, int dim=-1)", "linalg", kind="composite", promotion=_numeric,
      dtypes="numeric+complex", meta=_cross_meta, composite=_cross, reference=_cross_reference, samples=_cross_samples,
      method=False, doc="the cross product of 3-vectors along dim, broadcasting the rest")
defop("cross(Tensor input, Tensor other, int? dim=None)", "linalg", kind="composite", promotion=_numeric,
      dtypes="numeric+complex", meta=lambda input, other, dim=None: _cross_meta(input, other, dim, "cross"),
      composite=_legacy_cross, reference=_cross_reference,
      samples=lambda make, dtype: (Sample((make((4, 3)), make((4, 3)))), Sample((make((3, 2)), make((3, 2)), 0))),
      doc="torch.cross: without dim, along the first dimension of size 3")


#: half precision rounds after every product of the chain
_CHAINED_TOLERANCES = {"float16": (1e-2, 0.1), "bfloat16": (4e-2, 0.25)}


def _multi_dot(tensors):
    if len(tensors) < 2:
        raise ShapeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    items = [F.unsqueeze(first, 0) if first.ndim == 1 else first, *tensors[1:-1],
             F.unsqueeze(last, -1) if last.ndim == 1 else last]
    out = items[0]
    for item in items[1:]:
        out = F.matmul(out, item)
    if last.ndim == 1:
        out = F.squeeze(out, [-1])
    if first.ndim == 1:
        out = F.squeeze(out, [0])
    return out


def _multi_dot_meta(tensors):
    shapes = [shape(t) for t in tensors]
    if len(shapes) < 2:
        raise ShapeError(f"multi_dot(): expected at least 2 tensors but got {len(shapes)}")
    for i, s in enumerate(shapes):
        wanted = (1, 2) if i in (0, len(shapes) - 1) else (2,)
        if len(s) not in wanted:
            raise ShapeError(f"multi_dot(): tensor {i} must be {' or '.join(f'{w}D' for w in wanted)} but got "
                             f"{len(s)}D")
    rows = shapes[0][0] if len(shapes[0]) == 2 else None
    cols = shapes[-1][-1] if len(shapes[-1]) == 2 else None
    inner = shapes[0][-1]
    for s in shapes[1:]:
        if s[0] != inner:
            raise ShapeError(f"multi_dot(): tensors cannot be chained: shapes {shapes}")
        inner = s[-1]
    return tuple(d for d in (rows, cols) if d is not None)


def _multi_dot_samples(make, dtype):
    yield Sample(([make((2, 3)), make((3, 4)), make((4, 2))],))
    yield Sample(([make((3,)), make((3, 2)), make((2,))],), note="vector ends")


defop("linalg_multi_dot(Tensor[] tensors)", "linalg", kind="composite", promotion=_numeric, dtypes="numeric+complex",
      meta=_multi_dot_meta, composite=_multi_dot, reference=lambda tensors: np.linalg.multi_dot(tensors),
      samples=_multi_dot_samples, method=False, tolerances=_CHAINED_TOLERANCES,
      doc="the chained product of matrices (the first and last may be vectors)")
defop("chain_matmul(Tensor[] matrices)", "linalg", kind="composite", promotion=_numeric, dtypes="numeric+complex",
      meta=_multi_dot_meta, composite=_multi_dot, reference=lambda matrices: np.linalg.multi_dot(matrices),
      samples=lambda make, dtype: (Sample(([make((2, 3)), make((3, 4)), make((4, 2))],)),), method=False,
      tolerances=_CHAINED_TOLERANCES,
      doc="torch.chain_matmul (deprecated in PyTorch for linalg.multi_dot): matrices only")


def _vecdot_meta(x, y, dim=-1):
    out = broadcast_shapes("linalg.vecdot", shape(x), shape(y))
    axis = _wrap(dim, len(out), "linalg.vecdot")
    return out[:axis] + out[axis + 1:]


defop("linalg_vecdot(Tensor x, Tensor y, *, int dim=-1)", "linalg", kind="composite", promotion=floating,
      dtypes="float+complex", meta=_vecdot_meta, composite=lambda x, y, dim=-1: F.sum(F.mul(conj(x), y), dim),
      reference=lambda x, y, dim=-1: np.sum(np.conj(x) * y, axis=dim),
      samples=lambda make, dtype: (Sample((make((3, 4)), make((4,)))), Sample((make((2, 3)), make((2, 3))),
                                                                              {"dim": 0})),
      method=False, doc="the dot product of vectors along dim (x conjugated), broadcasting the rest")


# -- tensor inverse and solve -----------------------------------------------------------------------

def _prod(sizes) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def _tensorinv_shapes(s, ind):
    if ind <= 0:
        raise ArgumentError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = _prod(s[:ind]), _prod(s[ind:])
    if rows != cols:
        raise ShapeError(f"linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                         f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return rows, s[ind:] + s[:ind]


def _tensorinv(A, ind=2):
    rows, out = _tensorinv_shapes(tuple(A.shape), ind)
    return F.reshape(_inv(F.reshape(A, (rows, rows))), out)


defop("linalg_tensorinv(Tensor A, int ind=2)", "linalg", kind="composite", promotion=floating,
      dtypes="float+complex",
      torch_keywords={"input": "A"},
      normalize=reads_results,
      meta=lambda A, ind=2: _tensorinv_shapes(shape(A), ind)[1], composite=_tensorinv,
      reference=lambda A, ind=2: np.linalg.tensorinv(A, ind),
      samples=lambda make, dtype: (Sample((F.reshape(well_conditioned(make, (6, 6)), (2, 3, 6)), 2)),
                                   Sample((F.reshape(well_conditioned(make, (4, 4)), (4, 2, 2)), 1))),
      method=False, doc="the inverse of A seen as a matrix of prod(shape[:ind]) rows")


def _tensorsolve(A, B, dims=None):
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        A = F.permute(A, [d for d in range(A.ndim) if d not in moved] + moved)
    rows = B.numel()
    out = tuple(A.shape[B.ndim:])
    return F.reshape(F.linalg_solve(F.reshape(A, (rows, _prod(out))), F.reshape(B, (rows,))), out)


def _tensorsolve_meta(A, B, dims=None):
    s = shape(A)
    if len(s) <= len(shape(B)):
        raise ShapeError(f"linalg.tensorsolve: A (shape {s}) needs more dimensions than B (shape {shape(B)})")
    if dims is not None:
        moved = [_wrap(d, len(s), "linalg.tensorsolve") for d in dims]
        s = tuple(s[d] for d in range(len(s)) if d not in moved) + tuple(s[d] for d in moved)
    if s[:len(shape(B))] != shape(B) or _prod(s[len(shape(B)):]) != _prod(shape(B)):
        raise ShapeError(f"linalg.tensorsolve: Expected A (shape {shape(A)}) to start with B's shape {shape(B)} "
                         f"and its other dims to hold as many elements")
    return s[len(shape(B)):]


defop("linalg_tensorsolve(Tensor A, Tensor B, int[]? dims=None)", "linalg", kind="composite", promotion=floating,
      torch_keywords={"input": "A", "other": "B"},
      normalize=reads_results,
      dtypes="float+complex", meta=_tensorsolve_meta, composite=_tensorsolve,
      reference=lambda A, B, dims=None: np.linalg.tensorsolve(A, B, dims),
      samples=lambda make, dtype: (Sample((F.reshape(well_conditioned(make, (6, 6)), (2, 3, 6)), make((2, 3)))),
                                   Sample((F.reshape(well_conditioned(make, (4, 4)), (4, 2, 2)), make((2, 2)), [0]))),
      method=False, doc="X with tensordot(A, X, X.ndim) = B")


# -- Vandermonde ------------------------------------------------------------------------------------

def _vander(x, N=None):
    n = x.shape[-1] if N is None else N
    ones = F.add(F.mul(F.unsqueeze(x, -1), 0), 1)
    if n <= 1:
        return F.slice(ones, -1, 0, n)
    powers = F.cumprod(F.expand(F.unsqueeze(x, -1), tuple(x.shape) + (n - 1,)), -1, dtype=x.dtype)
    return F.cat([ones, powers], -1)


def _vander_meta(x, N=None):
    s = shape(x)
    if not s:
        raise ShapeError("linalg.vander: x must have at least one dimension")
    if N is not None and N <= 1:
        raise ArgumentError(f"linalg.vander: N must be greater than 1, got {N}")
    return s + (s[-1] if N is None else N,)


defop("linalg_vander(Tensor x, int? N=None)", "linalg", kind="composite", promotion=_numeric, dtypes="numeric+complex",
      meta=_vander_meta, composite=_vander,
      reference=lambda x, N=None: np.vander(x.reshape(-1, x.shape[-1])[0] if x.ndim == 1 else x, N, increasing=True)
      if x.ndim == 1 else np.stack([np.vander(r, N, increasing=True) for r in x.reshape(-1, x.shape[-1])]).reshape(
          x.shape + (x.shape[-1] if N is None else N,)),
      samples=lambda make, dtype: (Sample((make((4,)),)), Sample((make((2, 3)), 5), note="batched, N > n")),
      method=False, doc="powers x^0, x^1, ..., x^(N-1) along a new last dim (increasing, as PyTorch's)")


# -- torch.svd (legacy) -----------------------------------------------------------------------------

def _legacy_svd(input, some=True, compute_uv=True):
    """torch.svd: V rather than Vh; without compute_uv, zero-filled U (m x m) and V (n x n), as PyTorch."""
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        zeros = [F.zeros(batch + (k, k), dtype=input.dtype, device=input.device) for k in (m, n)]
        return zeros[0], F.linalg_svdvals(input), zeros[1]
    u, s, vh = F.linalg_svd(input, not some)
    return u, s, mH(vh)


def _legacy_svd_meta(input, some=True, compute_uv=True):
    u, s, vh = _svd_shapes(input, not some or not compute_uv)
    return u, s, vh[:-2] + (vh[-1], vh[-2])


def _svd_shapes(A, full):
    s = matrix_shape("svd", A)
    batch, (m, n) = s[:-2], s[-2:]
    k = min(m, n)
    return (batch + (m, m), batch + (k,), batch + (n, n)) if full else (batch + (m, k), batch + (k,), batch + (k, n))


def _legacy_svd_reference(input, some=True, compute_uv=True):
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = input.shape[:-2]
        return (np.zeros(batch + (m, m), input.dtype), np.linalg.svd(input, compute_uv=False),
                np.zeros(batch + (n, n), input.dtype))
    u, s, vh = np.linalg.svd(input, full_matrices=not some)
    return u, s, np.conj(np.swapaxes(vh, -1, -2))


defop("svd(Tensor input, bool some=True, bool compute_uv=True)", "linalg", kind="composite",
      promotion=floating_outputs("f", "r", "f"), dtypes="float+complex",
      meta=_legacy_svd_meta, composite=_legacy_svd, outputs=("U", "S", "V"), reference=_legacy_svd_reference,
      gauge=Gauge("S", (("U", -1), ("V", -1))),
      samples=lambda make, dtype: (Sample((make((4, 3)),)), Sample((make((2, 2, 3)), False), gradcheck=False,
                                                                   note="full V: its columns beyond k are not "
                                                                        "determined by A"),
                                   Sample((make((3, 2)), True, False), note="values only")),
      doc="torch.svd (deprecated in PyTorch for linalg.svd): U, S and V (not Vh); some=False for full matrices")
