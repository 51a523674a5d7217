"""Elementwise math, comparisons and logic. Broadcasting meta; the references are NumPy ufuncs."""
from __future__ import annotations

import math

import numpy as np

from .. import rules
from ..meta import elementwise as broadcast_meta, require, shape
from ..schema import defop
from . import F

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(name, reference, promotion=rules.same, dtypes="all", inplace=True, **fields):
    return defop(f"{name}(Tensor input)", "elementwise", promotion=promotion, dtypes=dtypes,
                 meta=broadcast_meta(name), reference=reference, inplace=inplace, **fields)


def _binary(name, reference, promotion=rules.same, dtypes="all", extra="", **fields):
    return defop(f"{name}(Tensor input, Tensor other{extra})", "elementwise", promotion=promotion,
                 dtypes=dtypes, meta=broadcast_meta(name), reference=reference, **fields)


# -- unary primitives -----------------------------------------------------------------------
_unary("neg", np.negative, dtypes="numeric", doc="-input")
_unary("abs", np.abs, dtypes="numeric")
_unary("sign", np.sign, dtypes="numeric", doc="-1, 0 or 1 by the sign of each element")
for _name, _ref in [("exp", np.exp), ("expm1", np.expm1), ("log", np.log), ("log1p", np.log1p),
                    ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("tanh", np.tanh),
                    ("erf", _erf)]:
    _unary(_name, _ref, promotion=rules.to_float)
_unary("floor", np.floor, dtypes="numeric", doc="integers pass through unchanged")
_unary("ceil", np.ceil, dtypes="numeric", doc="integers pass through unchanged")
defop("round(Tensor input, *, int decimals=0)", "elementwise", promotion=rules.same, dtypes="numeric",
      meta=broadcast_meta("round"), reference=lambda x, decimals=0: np.round(x, decimals), inplace=True,
      doc="rounds half to even, like PyTorch")
_unary("logical_not", np.logical_not, promotion=rules.to_bool, differentiable=False)
_unary("isnan", np.isnan, promotion=rules.to_bool, differentiable=False, inplace=False)

# -- unary composites -----------------------------------------------------------------------
_LN2 = math.log(2.0)
_unary("log2", np.log2, promotion=rules.to_float, kind="composite",
       composite=lambda x: F.div(F.log(x), _LN2))
_unary("reciprocal", np.reciprocal, promotion=rules.to_float, kind="composite",
       composite=lambda x: F.div(1, x))
_unary("rsqrt", lambda x: 1 / np.sqrt(x), promotion=rules.to_float, kind="composite",
       composite=lambda x: F.reciprocal(F.sqrt(x)))
_unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), promotion=rules.to_float, kind="composite",
       composite=lambda x: F.reciprocal(F.add(F.exp(F.neg(x)), 1)), doc="1 / (1 + exp(-input))")
_unary("isinf", np.isinf, promotion=rules.to_bool, dtypes="numeric", kind="composite", inplace=False,
       differentiable=False, composite=lambda x: F.eq(F.abs(x), math.inf))
_unary("isfinite", np.isfinite, promotion=rules.to_bool, dtypes="numeric", kind="composite", inplace=False,
       differentiable=False,
       composite=lambda x: F.logical_not(F.logical_or(F.isnan(x), F.isinf(x))))

# -- binary primitives ----------------------------------------------------------------------
_binary("add", lambda a, b, alpha=1: a + alpha * b, extra=", *, Scalar alpha=1", inplace=True,
        doc="input + alpha * other")
_binary("sub", lambda a, b, alpha=1: a - alpha * b, extra=", *, Scalar alpha=1", dtypes="numeric",
        inplace=True, doc="input - alpha * other")
_binary("mul", np.multiply, inplace=True)


def _div_promotion(rt, op, values):
    mode = values[op.param_index["rounding_mode"]]
    return rules.same(rt, op, values) if mode is not None else rules.to_float(rt, op, values)


def _div_reference(a, b, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))


def _check_rounding_mode(op, values):
    mode = values[op.param_index["rounding_mode"]]
    if mode not in (None, "trunc", "floor"):
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {mode!r}")


_binary("div", _div_reference, promotion=_div_promotion, extra=", *, str? rounding_mode=None",
        normalize=_check_rounding_mode, inplace=True,
        doc="true division; rounding_mode 'trunc' or 'floor' keeps integer dtypes")
_binary("floor_divide", np.floor_divide, dtypes="numeric", inplace=True)
_binary("remainder", np.remainder, dtypes="numeric", inplace=True, doc="Python's modulo: the sign of other")
_binary("pow", np.power, dtypes="numeric", inplace=True)
_binary("maximum", np.maximum, doc="elementwise max; NaN propagates")
_binary("minimum", np.minimum, doc="elementwise min; NaN propagates")
for _name, _ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                    ("gt", np.greater), ("ge", np.greater_equal)]:
    _binary(_name, _ref, promotion=rules.to_bool, differentiable=False, inplace=True)
for _name, _ref in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                    ("logical_xor", np.logical_xor)]:
    _binary(_name, _ref, promotion=rules.to_bool, differentiable=False, inplace=True)


# -- selection and interpolation --------------------------------------------------------------

def _where_meta(condition, input, other):
    require(getattr(condition, "_dtype", None) is not None and condition._dtype.name == "bool", "where",
            "condition must be a bool tensor", condition)
    return broadcast_meta("where")(condition, input, other)


defop("where(Index condition, Tensor input, Tensor other)", "elementwise", promotion=rules.same,
      meta=_where_meta, reference=np.where, method=False,
      doc="input where condition is true, else other")


def _clamp(x, min=None, max=None):
    if min is not None:
        x = F.maximum(x, min)
    if max is not None:
        x = F.minimum(x, max)
    return x


def _clamp_check(op, values):
    if values[1] is None and values[2] is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")


def _clamp_reference(x, min=None, max=None):
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


defop("clamp(Tensor input, Tensor? min=None, Tensor? max=None)", "elementwise", kind="composite",
      promotion=rules.same, dtypes="numeric", meta=broadcast_meta("clamp"), normalize=_clamp_check,
      composite=_clamp, reference=_clamp_reference, inplace=True, doc="min(max(input, min), max)")

defop("lerp(Tensor input, Tensor end, Tensor weight)", "elementwise", kind="composite",
      promotion=rules.same, dtypes="float", meta=broadcast_meta("lerp"),
      composite=lambda x, end, w: F.add(x, F.mul(w, F.sub(end, x))),
      reference=lambda x, end, w: x + w * (end - x), inplace=True, doc="input + weight * (end - input)")

__all__ = ["shape"]
