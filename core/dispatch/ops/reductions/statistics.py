"""Statistics and calculus on samples: cdist, cov, corrcoef, trapezoid/trapz, cumulative_trapezoid and
gradient. Composites of reductions, matmul and slicing, differentiated through their parts."""
from __future__ import annotations

from numbers import Number

import math

import numpy as np

from ...schema import rules
from ...schema.binding import int_argument, wrap_dim
from ...schema.dtypes import float32, get_default_dtype, int64
from ...schema.errors import ArgumentError, OutOfRangeError, ShapeError, describe
from ...schema.meta import broadcast_shapes, shape
from ...schema.promotion import promote_types
from ...schema import Sample, defop
from ..elementwise.complex_support import conj, refusing_complex
from ..namespace import F
from ..elementwise.opmath import in_opmath, rounded, widened


def _floating(t, dtype=None):
    """``t`` in ``dtype`` (default: its own if floating or complex, else the default float dtype)."""
    dtype = dtype or (t.dtype if t.dtype.is_inexact else get_default_dtype())
    return t if t.dtype is dtype else F.to_dtype(t, dtype)


def _along(t, dim: int, ndim: int):
    """A 1-D ``t`` shaped to broadcast along ``dim`` of an ``ndim``-D tensor."""
    return F.reshape(t, tuple(-1 if d == dim else 1 for d in range(ndim)))


# -- cdist ----------------------------------------------------------------------------------------------

_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _cdist_normalize(op, args) -> None:
    x1, x2, p = args["x1"], args["x2"], args["p"]
    if len(shape(x1)) < 2 or len(shape(x2)) < 2:
        raise ShapeError(f"cdist: expects x1 and x2 with at least 2 dims, got {describe(x1)} and {describe(x2)}")
    if shape(x1)[-1] != shape(x2)[-1]:
        raise ShapeError(f"cdist: x1 and x2 must have the same number of columns, got {describe(x1)} and "
                         f"{describe(x2)}")
    if not p >= 0:
        raise ArgumentError(f"cdist: only supports non-negative p values, got p={p}")
    if args["compute_mode"] not in _COMPUTE_MODES:
        raise ArgumentError(f"cdist: {args['compute_mode']!r} is not a valid value for compute_mode "
                            f"(one of {', '.join(_COMPUTE_MODES)})")


def _cdist_meta(x1, x2, p=2.0, compute_mode=_COMPUTE_MODES[0]):
    batch = broadcast_shapes("cdist", shape(x1)[:-2], shape(x2)[:-2])
    return batch + (shape(x1)[-2], shape(x2)[-2])


def _cdist(x1, x2, p=2.0, compute_mode=_COMPUTE_MODES[0]):
    """Norms of all row differences; norm's derivative gives zero distances a zero gradient, as PyTorch's."""
    differences = F.sub(F.unsqueeze(x1, -2), F.unsqueeze(x2, -3))
    return F.norm(differences, p, -1)


def _cdist_reference(x1, x2, p=2.0, compute_mode=None):
    d = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return np.count_nonzero(d, axis=-1).astype(x1.dtype)
    if p == math.inf:
        return d.max(axis=-1, initial=0)
    return (d ** p).sum(-1) ** (1 / p)


def _cdist_samples(make, dtype):
    yield Sample((make((3, 4)), make((5, 4))))
    yield Sample((make((2, 3, 2), noncontiguous=True), make((1, 4, 2)), 1.0), note="batch, p=1")
    yield Sample((make((3, 2)), make((2, 2)), 3.0), note="p=3")
    yield Sample((make((3, 2)), make((2, 2)), math.inf), note="p=inf")


defop("cdist(Tensor x1, Tensor x2, float p=2.0, str compute_mode='use_mm_for_euclid_dist_if_necessary')", "linalg",
      kind="composite", promotion=refusing_complex(rules.same, "cdist only supports floating-point dtypes"),
      dtypes="float", meta=_cdist_meta, normalize=_cdist_normalize,
      composite=_cdist, reference=_cdist_reference, samples=_cdist_samples, method=False, autocast="float32",
      doc="the p-norm distance between each row of x1 and each row of x2 (batched)")


# -- cov and corrcoef --------------------------------------------------------------------------------------

def _check_variables(op_name: str, x) -> None:
    if len(shape(x)) > 2:
        raise ShapeError(f"{op_name}: expected input to have two or fewer dimensions, got {describe(x)}")


def _cov_normalize(op, args) -> None:
    x = args["input"]
    _check_variables("cov", x)
    observations = shape(x)[-1] if shape(x) else 1
    for name in ("fweights", "aweights"):
        w = args[name]
        if w is None:
            continue
        if len(shape(w)) > 1 or (shape(w) and shape(w)[0] != observations):
            raise ShapeError(f"cov: expected {name} to be a scalar or 1-D tensor with {observations} elements "
                             f"(the number of observations), got {describe(w)}")
    if args["fweights"] is not None and args["fweights"].dtype.is_floating_point:
        raise TypeError(f"cov: expected fweights to have an integral dtype, got {describe(args['fweights'])}")
    if args["aweights"] is not None and not args["aweights"].dtype.is_floating_point:
        raise TypeError(f"cov: expected aweights to have a floating point dtype, got {describe(args['aweights'])}")
    for name in ("fweights", "aweights"):
        if args[name] is not None:
            _nonnegative(name, args[name])


def _cov_meta(x, correction=1, fweights=None, aweights=None):
    variables = shape(x)[0] if len(shape(x)) == 2 else 1
    return () if variables == 1 else (variables, variables)


def _nonnegative(name: str, w) -> None:
    if w.numel() and F.amin(w).item() < 0:
        raise ArgumentError(f"cov: {name} cannot be negative ({describe(w)})")


def _cov(x, correction=1, fweights=None, aweights=None):
    out_dtype = _floating(x).dtype
    return rounded(_cov_in(widened(_floating(x)), correction, fweights, aweights), out_dtype)


def _cov_in(x, correction, fweights, aweights):
    """cov with x floating, in the dtype it computes in."""
    x = F.reshape(x, (1, -1)) if x.ndim < 2 else x
    observations = x.shape[1]
    weights = None
    real = x.dtype.to_real()  # weights of complex observations are real
    for w in (fweights, aweights):
        if w is not None:
            w = _floating(w, real)
            weights = w if weights is None else F.mul(weights, w)
    if weights is None:
        mean, normalizer = F.mean(x, 1, True), max(observations - correction, 0)
    else:
        total = F.sum(weights)
        mean = F.div(F.sum(F.mul(x, weights), 1, True), total)
        if correction == 0:
            normalizer = total
        elif aweights is None:
            normalizer = F.sub(total, correction)
        else:
            spread = F.div(F.sum(F.mul(weights, _floating(aweights, real))), total)
            normalizer = F.sub(total, F.mul(spread, correction))
        normalizer = F.clamp(normalizer, 0)
    centered = F.sub(x, mean)
    scaled = centered if weights is None else F.mul(centered, weights)
    return F.squeeze(F.div(F.matmul(scaled, F.transpose(conj(centered), 0, 1)), normalizer))


def _cov_reference(x, correction=1, fweights=None, aweights=None):
    return np.asarray(np.cov(x, ddof=correction, fweights=fweights, aweights=aweights))


def _cov_samples(make, dtype):
    yield Sample((make((3, 5)),))
    yield Sample((make((6,), noncontiguous=True),), {"correction": 0}, note="one variable, correction 0")
    yield Sample((make((2, 4)),), {"fweights": make((4,), dtype=int64, low=0, high=4),
                                    "aweights": make((4,), dtype=float32, low=0.5, high=2)}, note="weights")


defop("cov(Tensor input, *, int correction=1, Index? fweights=None, Index? aweights=None)", "linalg",
      kind="composite", promotion=rules.to_float, dtypes="numeric+complex", meta=_cov_meta, normalize=_cov_normalize,
      composite=_cov, reference=_cov_reference, samples=_cov_samples,
      doc="the covariance matrix of the variables in input's rows (observations in columns)")


def _corrcoef(x):
    """cov scaled by the standard deviations; complex coefficients are clipped part by part, as in PyTorch."""
    c = _cov(x)
    if c.ndim == 0:
        return F.div(c, c)
    variances = F.diagonal(c)
    deviation = F.sqrt(F.real(variances) if variances.dtype.is_complex else variances)
    c = F.div(F.div(c, F.unsqueeze(deviation, 1)), F.unsqueeze(deviation, 0))
    if c.dtype.is_complex:
        return F.complex(F.clamp(F.real(c), -1, 1), F.clamp(F.imag(c), -1, 1))
    return F.clamp(c, -1, 1)


def _corrcoef_samples(make, dtype):
    yield Sample((make((3, 5)),))
    yield Sample((make((2, 4), noncontiguous=True),), note="non-contiguous")
    yield Sample((make((4,)),), note="one variable")


defop("corrcoef(Tensor input)", "linalg", kind="composite", promotion=rules.to_float, dtypes="numeric+complex",
      meta=lambda x: _cov_meta(x), normalize=lambda op, args: _check_variables("corrcoef", args["input"]),
      composite=_corrcoef, reference=lambda x: np.asarray(np.corrcoef(x)), samples=_corrcoef_samples,
      doc="Pearson correlation coefficients of the variables in input's rows, clipped to [-1, 1]")


# -- trapezoid, trapz, cumulative_trapezoid ----------------------------------------------------------------

def _integration_normalize(op, args) -> None:
    y, x = args["y"], args["x"]
    if not shape(y):
        raise ShapeError(f"{op.name}: y must have at least one dimension, got {describe(y)}")
    if x is not None and args["dx"] is not None:
        raise TypeError(f"{op.name}: takes x or dx, not both")
    dim = args["dim"]
    if x is None:
        return
    if len(shape(x)) == 1:
        if shape(x)[0] != shape(y)[dim]:
            raise ShapeError(f"{op.name}: there must be one x value for each sample point along dim {dim}, got "
                             f"{describe(x)} and {describe(y)}")
    else:
        broadcast_shapes(op.name, shape(x), shape(y))


def _spacing(y, x, dx, dim):
    """The widths of the intervals along dim: a number, or a tensor that broadcasts against y's intervals."""
    if x is None:
        return 1 if dx is None else dx
    x = _floating(x, y.dtype)
    if x.ndim == 1:
        return _along(F.diff(x), dim, y.ndim)
    x_dim = dim - y.ndim + x.ndim
    return F.diff(x, 1, x_dim) if x_dim >= 0 else F.diff(F.expand(x, tuple(y.shape)), 1, dim)


def _interval_areas(y, x=None, dx=None, dim=-1):
    y = _floating(y, _result_dtype(y, x))
    heights = F.add(F.slice(y, dim, 1), F.slice(y, dim, 0, -1))
    return F.mul(heights, F.div(_spacing(y, x, dx, dim), 2) if x is not None else (1 if dx is None else dx) / 2)


def _result_dtype(y, x):
    """PyTorch's: y and x promoted, and floating or complex (integer samples integrate in the default float
    dtype)."""
    dt = y.dtype if x is None else promote_types(y.dtype, x.dtype)
    return dt if dt.is_inexact else get_default_dtype()


@in_opmath
def _trapezoid(y, x=None, dx=None, dim=-1):
    return F.sum(_interval_areas(y, x, dx, dim), dim)


@in_opmath
def _cumulative_trapezoid(y, x=None, dx=None, dim=-1):
    return F.cumsum(_interval_areas(y, x, dx, dim), dim)


def _check_points(name: str, y, x, dim: int) -> None:
    """A 0-d x has no spacings: as PyTorch, it serves only where y has one sample along dim (no intervals)."""
    if x is not None and not shape(x) and shape(y) and shape(y)[dim] > 1:
        raise ShapeError(f"{name}: the sample points x must have at least one dim, got {describe(x)} for "
                         f"{describe(y)}")


def _trapezoid_meta(y, x=None, dx=None, dim=-1):
    _check_points("trapezoid", y, x, dim)
    out = shape(y)[:dim] + shape(y)[dim + 1:]
    return broadcast_shapes("trapezoid", out, shape(x)[:dim] + shape(x)[dim + 1:]) if x is not None and \
        len(shape(x)) > 1 else out


def _cumulative_meta(y, x=None, dx=None, dim=-1):
    _check_points("cumulative_trapezoid", y, x, dim)
    out = list(broadcast_shapes("cumulative_trapezoid", shape(y), shape(x)) if x is not None and len(shape(x)) > 1
               else shape(y))
    out[dim] = max(out[dim] - 1, 0)
    return tuple(out)


def _trapezoid_reference(y, x=None, *, dx=None, dim=-1):
    return np.asarray(np.trapezoid(y, x, 1.0 if dx is None else dx, axis=dim))


def _cumulative_reference(y, x=None, *, dx=None, dim=-1):
    from scipy.integrate import cumulative_trapezoid
    return cumulative_trapezoid(y, x, 1.0 if dx is None else dx, axis=dim)


def _integration_samples(make, dtype):
    yield Sample((make((3, 5)),))
    yield Sample((make((2, 4), noncontiguous=True), make((4,))), note="sample points")
    yield Sample((make((4, 3)),), {"dx": 0.5, "dim": 0}, note="dx along dim 0")
    yield Sample((make((2, 3)), make((2, 3))), note="points per sample")


_INTEGRATION = "(Tensor y, Tensor? x=None, *, Scalar? dx=None, dim dim=-1)"
_INTEGRATION_FIELDS = dict(kind="composite", promotion=rules.to_float, dtypes="numeric+complex",
                           normalize=_integration_normalize, samples=_integration_samples, method=False)

defop("trapezoid" + _INTEGRATION, "reduction", meta=_trapezoid_meta, composite=_trapezoid,
      reference=_trapezoid_reference, **_INTEGRATION_FIELDS,
      doc="the trapezoidal rule along dim, at sample points x or with spacing dx (default 1)")
defop("trapz" + _INTEGRATION, "reduction", meta=_trapezoid_meta, composite=_trapezoid,
      reference=_trapezoid_reference, **_INTEGRATION_FIELDS, doc="trapezoid's older name")
defop("cumulative_trapezoid" + _INTEGRATION, "reduction", meta=_cumulative_meta, composite=_cumulative_trapezoid,
      reference=_cumulative_reference, **_INTEGRATION_FIELDS,
      doc="the running trapezoidal rule along dim: one value per interval")


# -- gradient -------------------------------------------------------------------------------------------

def _gradient_dims(x, dim) -> list:
    ndim = len(shape(x))
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = int_argument("gradient", "dim", dim)
    dims = list(range(ndim)) if dim is None else [dim] if isinstance(dim, int) else \
        [int_argument("gradient", "dim", d) for d in dim]
    if dims and not ndim:  # PyTorch's IndexError: a 0-d tensor has no dim to take differences along
        raise OutOfRangeError(f"gradient: dimension specified as {dims[0]} but {describe(x)} has no dimensions")
    wrapped = [wrap_dim("gradient", d, ndim, x) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise ArgumentError(f"gradient: dim {dim} repeats a dimension")
    return wrapped


def _as_spacing(h):
    """A spacing as the composite takes it: None is 1, a NumPy scalar or a 0-d tensor its number."""
    if h is None:
        return 1
    if hasattr(h, "_data"):
        return h.item() if not shape(h) else h
    return h.item() if isinstance(h, Number) and hasattr(h, "item") else h


def _gradient_spacings(x, spacing, dims) -> list:
    """One spacing per dim: a number, or a 1-D tensor of coordinates as long as that dim."""
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise ArgumentError(f"gradient: expected spacing to be unspecified, a scalar or a list of length "
                                f"{len(dims)} (one per dim), got a list of length {len(spacing)}")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d, h in zip(dims, spacings):
        if hasattr(h, "_data"):
            if len(shape(h)) != 1 or shape(h)[0] != shape(x)[d]:
                raise ShapeError(f"gradient: the coordinates for dim {d} must be a 1-D tensor of length "
                                 f"{shape(x)[d]}, got {describe(h)}")
        elif not isinstance(h, (int, float)):
            raise TypeError(f"gradient: spacing must be a number, a list of numbers or a list of 1-D tensors, got "
                            f"{type(h).__name__}")
    return spacings


def _gradient_normalize(op, args) -> None:
    x, edge_order = args["input"], args["edge_order"]
    if edge_order not in (1, 2):
        raise ArgumentError(f"gradient: only supports edge_order=1 and edge_order=2, got {edge_order}")
    dims = _gradient_dims(x, args["dim"])
    for d in dims:
        if shape(x)[d] < edge_order + 1:
            raise ShapeError(f"gradient: expected each dimension size to be at least edge_order+1 "
                             f"({edge_order + 1}), got {describe(x)} along dim {d}")
    spacing = args["spacing"]
    args["spacing"] = [_as_spacing(h) for h in spacing] if isinstance(spacing, (list, tuple)) else _as_spacing(spacing)
    _gradient_spacings(x, args["spacing"], dims)


def _gradient_meta(x, spacing=1, dim=None, edge_order=1):
    return tuple(shape(x) for _ in _gradient_dims(x, dim))


def _edge_weights(dx1, dx2, first: bool):
    """The three weights of the second-order one-sided difference at the first or the last point."""
    total = F.add(dx1, dx2)
    if first:
        return (F.neg(F.div(F.add(F.mul(dx1, 2), dx2), F.mul(dx1, total))), F.div(total, F.mul(dx1, dx2)),
                F.neg(F.div(dx1, F.mul(dx2, total))))
    return (F.div(dx2, F.mul(dx1, total)), F.neg(F.div(total, F.mul(dx1, dx2))),
            F.div(F.add(F.mul(dx2, 2), dx1), F.mul(dx2, total)))


def _combine(weights, values):
    out = None
    for w, v in zip(weights, values):
        term = F.mul(v, w)
        out = term if out is None else F.add(out, term)
    return out


def _derivative_along(f, d: int, h, edge_order: int):
    """Central differences inside, one-sided ones of order edge_order at both ends, along dim d."""
    n = f.shape[d]
    part = lambda start, end=None: F.slice(f, d, start, end)  # noqa: E731
    if hasattr(h, "_data"):
        steps = F.diff(_floating(h, f.dtype))
        dx = lambda start, end=None: _along(F.slice(steps, 0, start, end), d, f.ndim)  # noqa: E731
    else:
        step = F.full((), h, dtype=f.dtype, device=f.device)
        dx = lambda start, end=None: step  # noqa: E731
    if not hasattr(h, "_data"):
        inner = F.div(F.sub(part(2), part(0, n - 2)), 2 * h)
    else:
        dx1, dx2 = dx(0, n - 2), dx(1, n - 1)
        total = F.add(dx1, dx2)
        weights = (F.neg(F.div(dx2, F.mul(dx1, total))), F.div(F.sub(dx2, dx1), F.mul(dx1, dx2)),
                   F.div(dx1, F.mul(dx2, total)))
        inner = _combine(weights, (part(0, n - 2), part(1, n - 1), part(2)))
    if edge_order == 1:
        first = F.div(F.sub(part(1, 2), part(0, 1)), dx(0, 1))
        last = F.div(F.sub(part(n - 1), part(n - 2, n - 1)), dx(n - 2))
    else:
        first = _combine(_edge_weights(dx(0, 1), dx(1, 2), True), (part(0, 1), part(1, 2), part(2, 3)))
        last = _combine(_edge_weights(dx(n - 3, n - 2), dx(n - 2), False),
                        (part(n - 3, n - 2), part(n - 2, n - 1), part(n - 1)))
    return F.cat([first, inner, last], d)


def _gradient(x, spacing=1, dim=None, edge_order=1):
    dims = _gradient_dims(x, dim)
    f = _floating(x)
    work = widened(f)  # half precision differences in float32, rounded once, as PyTorch's opmath
    return tuple(rounded(_derivative_along(work, d, h if hasattr(h, "_data") else float(h), edge_order), f.dtype)
                 for d, h in zip(dims, _gradient_spacings(x, spacing, dims)))


def _gradient_reference(x, *, spacing=1, dim=None, edge_order=1):
    dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    spacings = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    spacings = [h.astype(np.result_type(x.dtype, np.float32)) if isinstance(h, np.ndarray) else h for h in spacings]
    out = np.gradient(x.astype(np.result_type(x.dtype, np.float32)), *spacings, axis=tuple(dims),
                      edge_order=edge_order)
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def _gradient_samples(make, dtype):
    yield Sample((make((4, 5)),))
    yield Sample((make((3, 5), noncontiguous=True),), {"spacing": 2.0, "dim": 1, "edge_order": 2},
                 note="spacing 2, second-order edges")
    yield Sample((make((5,)),), {"spacing": [_coordinates(make, 5)], "edge_order": 2},
                 note="coordinates, second-order edges")
    yield Sample((make((3, 4)),), {"spacing": [_coordinates(make, 3), _coordinates(make, 4)]},
                 note="coordinates per dim")


def _coordinates(make, n: int):
    """Increasing float32 sample points at least 0.5 apart."""
    return F.cumsum(make((n,), dtype=float32, low=0.5, high=1.5), 0)


defop("gradient(Tensor input, *, Any spacing=1, Any dim=None, int edge_order=1)", "indexing", kind="composite",
      promotion=rules.to_float, dtypes="numeric+complex", meta=_gradient_meta, normalize=_gradient_normalize,
      composite=_gradient, reference=_gradient_reference, samples=_gradient_samples, outputs=("*",), method=False,
      doc="the derivative along each dim by central differences (one-sided at the ends), as a tuple")
