"""quantile and nanquantile: the sorted values at rank q (n - 1), with PyTorch's five interpolations."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.errors import ArgumentError, DtypeError, ShapeError
from ...schema.meta import describe, reduced, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from ..elementwise.float_args import is_tensor

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_shape(q) -> tuple:
    return tuple(q.shape) if is_tensor(q) else ()


def _quantile_normalize(op, args):
    """PyTorch's checks: a non-empty input, q a number or a tensor of at most one dim in input's dtype, within
    [0, 1]; a known interpolation."""
    x, q, name = args["input"], args["q"], op.name
    if not x.dtype.is_floating_point:
        raise DtypeError(f"{name}() input tensor must be either float or double dtype, got {describe(x)}")
    if 0 in shape(x):
        raise ShapeError(f"{name}() input tensor must be non-empty ({describe(x)})")
    if args["interpolation"] not in INTERPOLATIONS:
        raise ArgumentError(f"{name}() interpolation must be one of {', '.join(INTERPOLATIONS)}. "
                            f"Got '{args['interpolation']}'")
    if is_tensor(q):
        if q.ndim > 1:
            raise ShapeError(f"{name}() q must be a scalar or 1D tensor, got q of shape {tuple(q.shape)}")
        if q.dtype is not x.dtype:
            raise DtypeError(f"{name}() q tensor must be same dtype as the input tensor, got q {q.dtype.name} "
                             f"and input {x.dtype.name}")
        if q.numel() and not bool(F.all(F.logical_and(F.ge(q, 0), F.le(q, 1)))):
            raise ArgumentError(f"{name}() q values must be in the range [0, 1]")
    elif not 0 <= q <= 1:
        raise ArgumentError(f"{name}() q must be in the range [0, 1] but got {q}")


def _quantile_meta(x, q, dim=None, keepdim=False, interpolation="linear"):
    in_shape = shape(x)
    dims = None if dim is None else ((dim,) if in_shape else ())
    return _q_shape(q) + reduced(in_shape, dims, keepdim)


def _moved(x, source: int, destination: int):
    """``x`` with dim ``source`` moved to ``destination`` (both non-negative), the others in order."""
    order = [d for d in range(x.ndim) if d != source]
    order.insert(destination, source)
    return F.permute(x, tuple(order))


def _quantile(x, q, dim=None, keepdim=False, interpolation="linear", ignore_nan=False):
    """Rows along the last dim, sorted; the rank q (count - 1) of each (count: the values that are not NaN,
    for nanquantile) read below and above and interpolated; the q dim moved first."""
    rows = F.reshape(x, (-1,)) if dim is None or x.ndim == 0 else _moved(x, dim, x.ndim - 1)
    ordered = F.sort(rows, -1).values
    n = ordered.shape[-1]
    qs = F.reshape(q if is_tensor(q) else F.full((), q, dtype=x.dtype, device=x.device), (-1,))
    nans = F.sum(F.isnan(ordered), -1, True)
    last = F.to_dtype(F.sub(n - 1, nans), x.dtype) if ignore_nan else n - 1  # the last rank of each row
    rank = F.mul(qs, last)  # [Q], or [..., Q] for nanquantile
    rank = F.clamp(rank, 0, None)
    below, above = F.floor(rank), F.ceil(rank)
    if interpolation == "nearest":
        below = above = F.round(rank)
    elif interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above

    def at(position):
        index = F.clamp(F.to_dtype(position, int64), None, n - 1)
        return F.gather(ordered, -1, F.expand(index, tuple(ordered.shape[:-1]) + (index.shape[-1],)))

    low, high = at(below), at(above)
    if interpolation == "midpoint":
        out = F.mul(F.add(low, high), 0.5)
    elif interpolation == "linear":
        out = F.lerp(low, high, F.sub(rank, below))
    else:
        out = low
    if not ignore_nan:  # any NaN in a row makes its every quantile NaN
        out = F.where(F.gt(nans, 0), F.full((), math.nan, dtype=out.dtype, device=out.device), out)
    out = _moved(out, out.ndim - 1, 0)  # [Q, ...]
    if keepdim:
        kept = (1,) * x.ndim if dim is None else reduced(tuple(x.shape), (dim,) if x.ndim else (), True)
        out = F.reshape(out, (out.shape[0],) + kept)
    return out if is_tensor(q) and q.ndim == 1 else F.squeeze(out, 0)


def _quantile_reference(ignore_nan):
    def reference(x, q, dim=None, keepdim=False, interpolation="linear"):
        fn = np.nanquantile if ignore_nan else np.quantile
        axis = None if dim is None or np.ndim(x) == 0 else dim
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: NaN, as PyTorch, without a warning
            out = fn(np.asarray(x, np.float64), np.asarray(q, np.float64), axis=axis, keepdims=keepdim,
                     method=interpolation)
        if keepdim and axis is None and np.ndim(q) == 1 and np.ndim(x) == 0:
            out = np.reshape(out, (-1,))
        return out.astype(np.asarray(x).dtype)
    return reference


def _quantile_samples(make, dtype):
    for interpolation in INTERPOLATIONS:
        yield Sample((make((3, 5)), 0.3, 1), {"interpolation": interpolation}, note=interpolation)
    x = make((2, 3, 4))
    q = F.reshape(F.cat([F.full((1,), v, dtype=dtype, device=x.device) for v in (0.0, 0.25, 0.9, 1.0)], 0), (-1,))
    yield Sample((x, q, 2, True), note="tensor q, keepdim")
    yield Sample((make((4, 3), noncontiguous=True), q), note="all elements, tensor q")
    yield Sample((make((5,)), 0.5, None, True), {"interpolation": "nearest"}, note="all elements, keepdim")
    if dtype.is_floating_point:
        rows = make((3, 4))
        nan = F.full((), math.nan, dtype=dtype, device=rows.device)
        yield Sample((F.where(F.eq(F.arange(4, device=rows.device), 1), nan, rows), q, 1), note="NaN in rows")


_QUANTILE = dict(kind="composite", dtypes="float", normalize=_quantile_normalize,
                 promotion=refusing_complex(rules.same, "quantile() input tensor must be either float or double dtype"),
                 meta=_quantile_meta, samples=_quantile_samples,
                 number_operands=("q",),
                 nondifferentiable_inputs=("q",))  # finite differences of q would step outside [0, 1]
defop("quantile(Tensor input, Tensor q, dim? dim=None, bool keepdim=False, *, str interpolation='linear')",
      "reduction", reference=_quantile_reference(False), **_QUANTILE,
      composite=lambda x, q, dim=None, keepdim=False, interpolation="linear":
      _quantile(x, q, dim, keepdim, interpolation),
      doc="the q-th quantiles over dim (all elements by default), between the sorted values; NaN where the row "
          "holds NaN")
defop("nanquantile(Tensor input, Tensor q, dim? dim=None, bool keepdim=False, *, str interpolation='linear')",
      "reduction", reference=_quantile_reference(True), **_QUANTILE,
      composite=lambda x, q, dim=None, keepdim=False, interpolation="linear":
      _quantile(x, q, dim, keepdim, interpolation, ignore_nan=True),
      doc="quantile of the values that are not NaN (NaN for a row of NaN)")
