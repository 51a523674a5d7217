"""Reductions built on the basic ones: nansum, nanmean, count_nonzero, aminmax, std_mean and var_mean."""
from __future__ import annotations

import warnings

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema import defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from ._shared import _extremum_derivative, _moment_meta, _np_axis, _np_reduce, _reduce_meta, _var_reference


def _without_nan(x):
    """NaN replaced by 0 (integers have none)."""
    if not x.dtype.is_floating_point:
        return x
    return F.where(F.isnan(x), F.zeros_like(x), x)


def _nansum(x, dim=None, keepdim=False, dtype=None):
    return F.sum(_without_nan(x), dim, keepdim, dtype=dtype)


def _nanmean(x, dim=None, keepdim=False, dtype=None):
    """The sum of the values that are not NaN over their count (NaN where there are none)."""
    counted = F.sum(F.logical_not(F.isnan(x)), dim, keepdim)
    total = F.nansum(x, dim, keepdim, dtype=dtype)
    return F.div(total, F.to_dtype(counted, total.dtype))


defop("nansum(Tensor input, dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)", "reduction",
      kind="composite", promotion=refusing_complex(rules.accumulate, "nansum on CPU does not support complex inputs"),
      meta=_reduce_meta("nansum"), composite=_nansum,
      reference=_np_reduce(np.nansum), doc="sum treating NaN as zero")
defop("nanmean(Tensor input, dim[]? dim=None, bool keepdim=False, *, dtype? dtype=None)", "reduction",
      kind="composite",
      promotion=refusing_complex(rules.float_or_requested, "nansum on CPU does not support complex inputs"),
      dtypes="float", meta=_reduce_meta("nanmean"),
      composite=_nanmean, doc="mean of the values that are not NaN",
      reference=lambda x, dim=None, keepdim=False, dtype=None: _quiet(np.nanmean, x, axis=_np_axis(x, dim),
                                                                      keepdims=keepdim))


def _quiet(fn, *args, **kwargs):
    """A NumPy nan-function without its warning for all-NaN (or empty) slices, whose answer is NaN."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


defop("count_nonzero(Tensor input, dim[]? dim=None)", "reduction", dtypes="all+complex", kind="composite",
      promotion=lambda rt, op, args: (rt, int64), meta=lambda x, dim=None: _reduce_meta("count_nonzero")(x, dim),
      composite=lambda x, dim=None: F.sum(F.ne(x, 0), dim), differentiable=False,
      reference=lambda x, dim=None: np.asarray(np.count_nonzero(x, axis=_np_axis(x, dim)), np.int64),
      doc="the number of nonzero elements over dim (all by default)")


def _aminmax_meta(x, dim=None, keepdim=False):
    out = _reduce_meta("aminmax", needs_elements=True)(x, dim, keepdim)
    return out, out


def _aminmax_derivative(grads, input, dim, keepdim, results):
    """Each of min and max shares its gradient evenly among the elements equal to it, as amin and amax."""
    total = None
    for grad, result in zip(grads, results):
        if grad is not None:
            part = _extremum_derivative(grad, input, dim, keepdim, result)
            total = part if total is None else F.add(total, part)
    return total


defop("aminmax(Tensor input, *, dim? dim=None, bool keepdim=False)", "reduction", kind="composite",
      promotion=lambda rt, op, args: (rt, (rt, rt)), outputs=("min", "max"), meta=_aminmax_meta,
      composite=lambda x, dim=None, keepdim=False: (F.amin(x, dim, keepdim), F.amax(x, dim, keepdim)),
      derivative=_aminmax_derivative,
      reference=lambda x, dim=None, keepdim=False: (np.min(x, axis=_np_axis(x, dim), keepdims=keepdim),
                                                    np.max(x, axis=_np_axis(x, dim), keepdims=keepdim)),
      doc="(amin, amax) in one call; NaN propagates")


def _moments_meta(name):
    inner = _moment_meta(name)

    def meta(x, dim=None, correction=1, keepdim=False):
        out = inner(x, dim, correction, keepdim)
        return out, out
    return meta


def _declare_with_mean(op_name: str, spread_reference) -> None:
    """std_mean and var_mean: the spread op (std or var) and the mean over the same dims."""
    name = op_name.removesuffix("_mean")

    def composite(x, dim=None, correction=1, keepdim=False):
        return getattr(F, name)(x, dim, correction=correction, keepdim=keepdim), F.mean(x, dim, keepdim)

    def reference(x, dim=None, correction=1, keepdim=False):
        return (spread_reference(_var_reference(x, dim, correction, keepdim)),
                np.mean(x, axis=_np_axis(x, dim), keepdims=keepdim))

    defop(f"{op_name}(Tensor input, dim[]? dim=None, *, Scalar correction=1, bool keepdim=False)", "reduction",
          kind="composite", promotion=lambda rt, op, args: (rt, (rt.to_real(), rt)), dtypes="float+complex",
          outputs=(name, "mean"),
          meta=_moments_meta(op_name), composite=composite, reference=reference,
          doc=f"({name}, mean) over dim")


_declare_with_mean("std_mean", np.sqrt)
_declare_with_mean("var_mean", lambda variance: variance)
