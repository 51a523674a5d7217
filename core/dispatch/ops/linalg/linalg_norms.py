"""Vector and matrix norms and the condition number: torch.linalg's and torch's older spellings.

Composites of Ember ops (the existing ``norm`` for vector norms, whose derivative is PyTorch's subgradient at
zero) and of the SVD for the spectral and nuclear norms. Norms of complex tensors are real: they are the norms of
the magnitudes (``abs``, whose derivative carries the phase back).
"""
from __future__ import annotations

import math

import numpy as np

from ...schema.errors import ArgumentError, DtypeError, ShapeError, describe
from ...schema.meta import shape
from ...schema import OPS, Sample, defop
from ..namespace import F
from .decompositions import well_conditioned
from ._shared import _inv
from .matrices import (float_dtype, floating, floating_real, label, matrix_shape, reads_results,
                       wrap_dim as _wrap)


def _requested(rt, op, args):
    """float32/float64 or complex input, a real output (the component dtype); ``dtype=`` names the dtype to
    compute in."""
    dt = float_dtype(op.name, rt)
    wanted = args.get("dtype")
    if wanted is not None:
        from ...schema.dtypes import SCALAR_TYPE_NAMES, as_dtype
        wanted = as_dtype(wanted)
        float_dtype(op.name, wanted)
        if dt is not None and dt.is_complex != wanted.is_complex:
            kind = "complex for complex" if dt.is_complex else "real for real"
            raise DtypeError(f"{label(op.name)}: dtype should be {kind} inputs, but got {SCALAR_TYPE_NAMES[wanted]}")
        return wanted, wanted.to_real()
    return dt, dt and dt.to_real()


def _magnitudes(x):
    """|x| for complex x (real, differentiable), x itself when real: what real norms are taken of."""
    return F.abs(x) if x.dtype.is_complex else x


def _widened(x) -> np.ndarray:
    """A float64 (complex128, for complex ``x``) copy, for the references."""
    return np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)


# -- vector and matrix norms ------------------------------------------------------------------------

def _vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    if isinstance(ord, str):
        raise ArgumentError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if x.dtype.is_complex:
        return F.norm(F.abs(x if dtype is None else F.to_dtype(x, dtype)), float(ord), dim, keepdim)
    return F.norm(x, float(ord), dim, keepdim, dtype=dtype)


def _vector_norm_meta(x, ord=2, dim=None, keepdim=False, dtype=None):
    return OPS["norm"].meta(x, "fro", dim, keepdim)


def _vector_norm_reference(x, ord=2, dim=None, keepdim=False, dtype=None):
    axis = None if dim is None or dim == () else tuple(dim) if isinstance(dim, (tuple, list)) else dim
    x = np.abs(_widened(x))
    if ord == math.inf:
        return np.max(x, axis=axis, keepdims=keepdim)
    if ord == -math.inf:
        return np.min(x, axis=axis, keepdims=keepdim)
    if ord == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    return np.sum(x ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)


def _vector_norm_samples(make, dtype):
    yield Sample((make((3, 4)),), note="2-norm of everything")
    yield Sample((make((2, 3, 4)), 1, (1, 2), True), note="1-norm over two dims, kept")
    yield Sample((make((3, 4)), math.inf, -1), note="max norm")
    yield Sample((make((3, 4)), 3.5, 0), note="fractional order")


defop("linalg_vector_norm(Tensor x, Scalar ord=2, dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)",
      "linalg", kind="composite", promotion=_requested, dtypes="float+complex", meta=_vector_norm_meta,
      empty_dim_reduces_all=True, torch_keywords={"input": "x"},
      composite=_vector_norm, reference=_vector_norm_reference, samples=_vector_norm_samples, method=False,
      doc="the ord-norm of vectors along dim (of the flattened tensor without dim): sum(|x|^ord)^(1/ord), max, "
          "min or the count of non-zeros for ord inf, -inf, 0")


_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _matrix_norm_dims(A, dim, name):
    if len(dim) != 2:
        raise ShapeError(f"{name}: dim must be a 2-tuple, got {tuple(dim)}")
    d0, d1 = (_wrap(d, len(shape(A)), name) for d in dim)
    if d0 == d1:
        raise ShapeError(f"{name}: dims must be different, got ({d0}, {d1})")
    return d0, d1


def _singular_values_at(A, d0, d1):
    """The singular values of the matrices spanned by dims (d0, d1), those dims moved to the end."""
    rest = [d for d in range(A.ndim) if d not in (d0, d1)]
    return F.linalg_svdvals(F.permute(A, rest + [d0, d1]))


def _matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    if ord not in _MATRIX_ORDS:
        raise ArgumentError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = _matrix_norm_dims(A, dim, "linalg.matrix_norm")
    if dtype is not None:
        A = F.to_dtype(A, dtype)
    if ord == "fro":
        return F.norm(_magnitudes(A), "fro", (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        values = _singular_values_at(A, d0, d1)
        out = F.sum(values, -1) if ord == "nuc" else (F.amax(values, -1) if ord == 2 else F.amin(values, -1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = F.unsqueeze(out, d)
        return out
    along, across = (d1, d0) if abs(ord) == math.inf else (d0, d1)  # inf: max row sum; 1: max column sum
    sums = F.sum(F.abs(A), along, True)
    out = F.amax(sums, across, True) if ord > 0 else F.amin(sums, across, True)
    return out if keepdim else F.squeeze(out, [d0, d1])


def _matrix_norm_meta(A, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    matrix_shape("linalg_matrix_norm", A)
    d0, d1 = _matrix_norm_dims(A, dim, "linalg.matrix_norm")
    s = shape(A)
    return tuple(1 if i in (d0, d1) else n for i, n in enumerate(s)) if keepdim else \
        tuple(n for i, n in enumerate(s) if i not in (d0, d1))


def _matrix_norm_reference(A, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    out = np.linalg.norm(_widened(A), ord=ord, axis=tuple(dim), keepdims=keepdim)
    return out


def _matrix_norm_samples(make, dtype):
    yield Sample((make((3, 4)),), note="Frobenius")
    yield Sample((make((2, 3, 3)), "nuc"), note="nuclear, batched")
    yield Sample((make((3, 2, 4)), math.inf, (0, 2), True), note="max row sum over dims (0, 2), kept")
    yield Sample((make((4, 3)), -2), note="smallest singular value")


defop("linalg_matrix_norm(Tensor A, Any ord='fro', int[] dim=[-2, -1], bool keepdim=False, *, dtype? dtype=None)",
      "linalg", kind="composite", promotion=_requested, dtypes="float+complex", meta=_matrix_norm_meta,
      torch_keywords={"input": "A"},
      composite=_matrix_norm, reference=_matrix_norm_reference, samples=_matrix_norm_samples, method=False,
      doc="'fro', 'nuc', inf/-inf (max/min row sum), 1/-1 (column sum), 2/-2 (largest/smallest singular value)")


def _norm_dims(input, dim):
    if dim is None:
        return None
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _linalg_norm(input, ord=None, dim=None, keepdim=False, dtype=None):
    dims = _norm_dims(input, dim)
    if dims is not None and len(dims) == 2:
        return _matrix_norm(input, "fro" if ord is None else ord, dims, keepdim, dtype)
    if dims is None and ord is not None:
        if input.ndim == 2:
            return _matrix_norm(input, ord, (-2, -1), keepdim, dtype)
        if input.ndim != 1:
            raise ShapeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                             f"{input.ndim}D.")
    return _vector_norm(input, 2 if ord is None else ord, dims, keepdim, dtype)


def _linalg_norm_meta(input, ord=None, dim=None, keepdim=False, dtype=None):
    dims = _norm_dims(input, dim)
    if dims is not None and len(dims) not in (1, 2):
        raise ShapeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)} "
                         f"({describe(input)})")
    if (dims is not None and len(dims) == 2) or (dims is None and ord is not None and len(shape(input)) == 2):
        return _matrix_norm_meta(input, ord, dims or (-2, -1), keepdim)
    return OPS["norm"].meta(input, "fro", dims, keepdim)


def _linalg_norm_reference(input, ord=None, dim=None, keepdim=False, dtype=None):
    dims = None if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if dims is None and ord is None:
        return np.linalg.norm(_widened(input).reshape(-1), keepdims=False).reshape(
            (1,) * input.ndim if keepdim else ())
    return np.linalg.norm(_widened(input), ord=ord, axis=dims, keepdims=keepdim)


def _linalg_norm_samples(make, dtype):
    yield Sample((make((2, 3, 4)),), note="2-norm of everything")
    yield Sample((make((3, 4)), "nuc"), note="matrix norm of a 2-D input")
    yield Sample((make((3, 4)), 1, 1), note="vector norm along a dim")
    yield Sample((make((2, 3, 4)), -math.inf, (0, 2)), note="matrix norm over two dims")


defop("linalg_norm(Tensor input, Any ord=None, dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)",
      "linalg", kind="composite", promotion=_requested, dtypes="float+complex", meta=_linalg_norm_meta,
      composite=_linalg_norm, reference=_linalg_norm_reference, samples=_linalg_norm_samples, method=False,
      doc="a vector norm (one dim, or the flattened input) or a matrix norm (two dims, or a 2-D input with ord)")


# -- condition number ---------------------------------------------------------------------------------

def _cond(A, p=None):
    if p is None or p in (2, -2):
        values = F.linalg_svdvals(A)
        largest, smallest = F.amax(values, -1), F.amin(values, -1)
        return F.div(smallest, largest) if p == -2 else F.div(largest, smallest)
    if p not in _MATRIX_ORDS:
        raise ArgumentError(f"linalg.cond: Order {p} not supported.")
    matrix_shape("linalg_cond", A, square=True)
    return F.mul(_matrix_norm(A, p), _matrix_norm(_inv(A), p))


def _cond_meta(A, p=None):
    return matrix_shape("linalg_cond", A, square=p not in (None, 2, -2))[:-2]


def _cond_samples(make, dtype):
    yield Sample((well_conditioned(make, (3, 3)),), note="2-norm")
    yield Sample((well_conditioned(make, (2, 3, 3)), "fro"), note="Frobenius, batched")
    yield Sample((make((4, 3)), -2), note="rectangular")


defop("linalg_cond(Tensor A, Any p=None)", "linalg", kind="composite", promotion=floating_real,
      dtypes="float+complex",
      torch_keywords={"input": "A"},
      normalize=reads_results,
      meta=_cond_meta, composite=_cond, reference=lambda A, p=None: np.linalg.cond(A, p), samples=_cond_samples,
      method=False, doc="the condition number ||A||_p ||A^-1||_p (a ratio of singular values for p None, 2, -2)")


# -- torch's older norm names -----------------------------------------------------------------------

def _dist_meta(input, other, p=2):
    from ...schema.meta import broadcast_shapes
    broadcast_shapes("dist", shape(input), shape(other))
    return ()


defop("dist(Tensor input, Tensor other, Scalar p=2)", "linalg", kind="composite", promotion=floating_real,
      dtypes="float+complex", meta=_dist_meta,
      composite=lambda input, other, p=2: F.norm(_magnitudes(F.sub(input, other)), float(p)),
      reference=lambda input, other, p=2: _vector_norm_reference(np.subtract(input, other), p),
      samples=lambda make, dtype: (Sample((make((3, 4)), make((4,)))), Sample((make((2, 3)), make((2, 3)), 1))),
      doc="the p-norm of input - other (broadcast)")


def _frobenius_norm_reference(input, dim, keepdim=False):
    return np.sqrt(np.sum(np.square(np.abs(_widened(input))), axis=tuple(dim), keepdims=keepdim))


defop("frobenius_norm(Tensor input, dim[]? dim, bool keepdim=False)", "linalg", kind="composite",
      promotion=floating_real, dtypes="float+complex", empty_dim_reduces_all=True,
      meta=lambda input, dim, keepdim=False: OPS["norm"].meta(input, "fro", dim, keepdim),
      composite=lambda input, dim, keepdim=False: F.norm(_magnitudes(input), "fro", dim, keepdim),
      reference=_frobenius_norm_reference,
      samples=lambda make, dtype: (Sample((make((3, 4)), (0, 1))), Sample((make((2, 3, 4)), (-1,), True))),
      method=False, doc="the square root of the sum of squares over dim")


def _nuclear_norm(input, dim=(-2, -1), keepdim=False):
    return _matrix_norm(input, "nuc", dim, keepdim)


defop("nuclear_norm(Tensor input, int[] dim=[-2, -1], bool keepdim=False)", "linalg", kind="composite",
      promotion=floating_real, dtypes="float+complex",
      meta=lambda input, dim=(-2, -1), keepdim=False: _matrix_norm_meta(input, "nuc", dim, keepdim),
      composite=_nuclear_norm,
      reference=lambda input, dim=(-2, -1), keepdim=False: _matrix_norm_reference(input, "nuc", dim, keepdim),
      samples=lambda make, dtype: (Sample((make((3, 4)),)), Sample((make((2, 3, 2)), [0, 2], True))),
      method=False, doc="the sum of singular values (linalg.matrix_norm with 'nuc')")


def _norms_along(x, p: float, dim: int):
    """The p-norm of each slice of ``x`` along ``dim`` (kept dims): over every other dim, or of each element of
    a 1-D ``x``, whose other dims are none (an empty dim list would reduce over every dim); real."""
    x = _magnitudes(x)
    others = [d for d in range(x.ndim) if d != dim]
    if not others:
        return F.norm(F.unsqueeze(x, -1), p, [-1])
    return F.norm(x, p, others, True)


def _renorm(input, p, dim, maxnorm):
    dim = _wrap(dim, input.ndim, "renorm")
    norms = _norms_along(input, float(p), dim)
    scale = F.where(F.gt(norms, maxnorm), F.div(float(maxnorm), F.add(norms, 1e-7)), 1.0)
    return F.mul(input, scale)


def _renorm_reference(input, p, dim, maxnorm):
    axes = tuple(d for d in range(input.ndim) if d != dim % input.ndim)
    norms = _vector_norm_reference(input, p, axes, True)
    return input * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


def _renorm_check(op, args):
    if args["p"] <= 0:
        raise ArgumentError(f"renorm: non-positive norm not supported, got p={args['p']}")
    if args["maxnorm"] < 0:
        raise ArgumentError(f"renorm: expected maxnorm to be >= 0 but got {args['maxnorm']}")


defop("renorm(Tensor input, Scalar p, int dim, Scalar maxnorm)", "linalg", kind="composite",
      promotion=floating, dtypes="float+complex", meta=lambda input, p, dim, maxnorm: shape(input),
      normalize=_renorm_check, composite=_renorm,
      reference=_renorm_reference, inplace=True,
      samples=lambda make, dtype: (Sample((make((3, 4)), 2, 0, 1.0)), Sample((make((2, 3, 2)), 1, -1, 0.5))),
      doc="rescales each slice along dim whose p-norm exceeds maxnorm to that norm")


def _norm_except_dim(v, pow=2, dim=0):
    if dim == -1:
        return F.norm(_magnitudes(v), float(pow))
    dim = _wrap(dim, v.ndim, "norm_except_dim")
    return _norms_along(v, float(pow), dim)


def _norm_except_dim_meta(v, pow=2, dim=0):
    s = shape(v)
    if dim == -1:
        return ()
    dim = _wrap(dim, len(s), "norm_except_dim")
    return tuple(n if i == dim else 1 for i, n in enumerate(s))


def _norm_except_dim_reference(v, pow=2, dim=0):
    if dim == -1:
        return _vector_norm_reference(v, pow)
    return _vector_norm_reference(v, pow, tuple(d for d in range(v.ndim) if d != dim % v.ndim), True)


defop("norm_except_dim(Tensor v, int pow=2, int dim=0)", "linalg", kind="composite",
      promotion=floating_real, dtypes="float+complex", meta=_norm_except_dim_meta, composite=_norm_except_dim,
      reference=_norm_except_dim_reference,
      samples=lambda make, dtype: (Sample((make((3, 4)),)), Sample((make((2, 3, 2)), 1, 1)),
                                   Sample((make((3, 2)), 2, -1), note="every dim")),
      method=False, doc="the pow-norm over every dim but dim (weight normalization's g); dim=-1: over all")
