"""``isclose``: elementwise closeness, the one op behind ``allclose`` and ``ember.testing.assert_close``.

A composite of comparisons and arithmetic, so every backend runs it. PyTorch's rule: ``input`` and
``other`` share one dtype; values are close when equal (infinities included), when both are NaN and
``equal_nan`` is set, or when ``|input - other| <= atol + |rtol * other|`` with a finite left side.
Integer and bool inputs are compared in the default float dtype (no wrap-around), as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import get_default_dtype
from ...schema.errors import ArgumentError, DtypeError, describe
from ...schema.meta import elementwise as broadcast_meta
from ...schema import Sample, defop
from ..namespace import F


def _check(op, args):
    x, other, rtol, atol = args["input"], args["other"], args["rtol"], args["atol"]
    for name, value in (("input", x), ("other", other)):
        if not hasattr(value, "_data"):
            raise TypeError(f"isclose: {name} must be a tensor, got {type(value).__name__}")
    if x._dtype is not other._dtype:
        raise DtypeError(f"isclose: input and other must have one dtype, got {describe(x)} and {describe(other)}")
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if tolerance < 0:
            raise ArgumentError(f"isclose: {name} must be greater than or equal to zero, but got {tolerance}")


def _isclose(x, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = F.eq(x, other)
    floating = x.dtype.is_inexact
    if equal_nan and floating:
        close = F.logical_or(close, F.logical_and(F.isnan(x), F.isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    if not floating:
        x, other = F.to_dtype(x, get_default_dtype()), F.to_dtype(other, get_default_dtype())
    error = F.abs(F.sub(x, other))
    allowed = F.add(F.abs(F.mul(other, rtol)), atol)
    return F.logical_or(close, F.logical_and(F.le(error, allowed), F.isfinite(error)))


def _reference(x, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    x, other = np.asarray(x), np.asarray(other)
    close = x == other
    if equal_nan and x.dtype.kind in "fc":
        close |= np.isnan(x) & np.isnan(other)
    if rtol == 0 and atol == 0:
        return close
    if x.dtype.kind not in "fc":
        x, other = x.astype(get_default_dtype().name), other.astype(get_default_dtype().name)
    with np.errstate(over="ignore", invalid="ignore"):
        error = np.abs(x - other)
        allowed = (atol + np.abs(rtol * other)).astype(x.real.dtype)
        return close | (np.isfinite(error) & (error <= allowed))


def _samples(make, dtype):
    a = make((3, 4))
    yield Sample((a, F.clone(a)), note="identical")
    yield Sample((make((3, 4)), make((3, 4))), {"rtol": 0.5, "atol": 0.5}, note="loose tolerances")
    yield Sample((make((4, 1), noncontiguous=True), make((3,))), {"rtol": 0.0, "atol": 1.0}, note="broadcast")
    yield Sample((make((2, 3)), make((2, 3))), {"rtol": 0.0, "atol": 0.0}, note="exact equality")
    if dtype.is_floating_point:
        special = F.cat([F.full((1,), v, dtype=dtype, device=a.device)
                         for v in (float("nan"), float("inf"), -float("inf"), 1.0)])
        yield Sample((special, F.flip(special, [0])), note="nan and inf")
        yield Sample((special, F.clone(special)), {"equal_nan": True}, note="nan and inf, equal_nan")


defop("isclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)",
      "elementwise", kind="composite", promotion=rules.to_bool, meta=broadcast_meta("isclose"), dtypes="all+complex",
      normalize=_check, composite=_isclose, reference=_reference, samples=_samples, differentiable=False,
      doc="|input - other| <= atol + rtol * |other|, elementwise; equal values (infinities too) are close, "
          "NaNs only with equal_nan")
