"""Elementwise math, comparisons and logic. Broadcasting meta; the references are NumPy ufuncs."""
from __future__ import annotations

import math

import numpy as np

from .. import rules
from ..dtypes import bool_, get_default_dtype
from ..errors import DtypeError
from ..meta import elementwise as broadcast_meta, require, shape
from ..schema import FLOAT32_ON_CUDA, Sample, defop
from . import F

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(name, reference, promotion=rules.same, dtypes="all", inplace=True, **fields):
    return defop(f"{name}(Tensor input)", "elementwise", promotion=promotion, dtypes=dtypes,
                 meta=broadcast_meta(name), reference=reference, inplace=inplace, **fields)


def _binary(name, reference, promotion=rules.same, dtypes="all", extra="", **fields):
    return defop(f"{name}(Tensor input, Tensor other{extra})", "elementwise", promotion=promotion,
                 dtypes=dtypes, meta=broadcast_meta(name), reference=reference, **fields)


# -- conformance samples for attributes (the suite adds shape, layout and special-value samples) ---

def _round_samples(make, dtype):
    if dtype.is_floating_point:
        yield Sample((make((2, 3)),), {"decimals": 2}, note="decimals=2")
        yield Sample((make((2, 3), low=-500, high=500),), {"decimals": -2}, note="decimals=-2")


def _alpha_samples(make, dtype):
    if dtype.kind != "bool":
        alpha = 0.5 if dtype.is_floating_point else -3
        yield Sample((make((2, 3)), make((2, 3))), {"alpha": alpha}, note=f"alpha={alpha}")
        yield Sample((make((4, 1), noncontiguous=True), make((3,))), {"alpha": alpha}, note="broadcast")
        yield Sample((make((2, 3)), make(()).item()), {"alpha": alpha}, note="Python number other")


def _div_samples(make, dtype):
    for mode in ("trunc", "floor"):
        kwargs = {"rounding_mode": mode}
        yield Sample((make((2, 3)), make((2, 3), nonzero=True)), kwargs, note=f"rounding_mode={mode}")
        yield Sample((make((4, 1), noncontiguous=True), make((3,), nonzero=True)), kwargs, note="broadcast")
        yield Sample((make((2, 3)), make((), nonzero=True).item()), kwargs, note="Python number divisor")


def _as_float(x):
    """Integer and bool inputs of a to_float composite, in the default float dtype, before any arithmetic."""
    return x if x.dtype.is_floating_point else F.to_dtype(x, get_default_dtype())


# -- unary primitives -----------------------------------------------------------------------
# Derivatives take the names of what they need: ``grad``, op parameters, ``result``.
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _zero_grad(grad):
    """Piecewise-constant ops (floor, sign, ...): the gradient is zero almost everywhere."""
    return F.zeros_like(grad)


_unary("neg", np.negative, dtypes="numeric", doc="-input", scalar="-input", derivative=lambda grad: F.neg(grad))
_unary("abs", np.abs, dtypes="numeric", scalar="abs(input)", derivative=lambda grad, input: F.mul(grad, F.sign(input)),
       doc="abs'(0) = 0, as in PyTorch")
_unary("sign", np.sign, dtypes="numeric", doc="-1, 0 or 1 by the sign of each element", derivative=_zero_grad,
       scalar="where(input > 0, 1, where(input < 0, -1, input * 0))")  # input * 0: NaN stays NaN
_unary("exp", np.exp, promotion=rules.to_float, scalar="exp(input)", derivative=lambda grad, result: F.mul(grad, result),
       autocast=FLOAT32_ON_CUDA)
_unary("expm1", np.expm1, promotion=rules.to_float, scalar="expm1(input)", autocast=FLOAT32_ON_CUDA,
       derivative=lambda grad, result: F.mul(grad, F.add(result, 1)))
_POSITIVE = {"input": {"low": 0.1, "high": 5.0}}  # grad_domain of functions real only for positive inputs
_unary("log", np.log, promotion=rules.to_float, scalar="log(input)", autocast=FLOAT32_ON_CUDA, derivative=lambda grad, input: F.div(grad, input),
       grad_domain=_POSITIVE)
_unary("log1p", np.log1p, promotion=rules.to_float, scalar="log1p(input)", autocast=FLOAT32_ON_CUDA,
       grad_domain={"input": {"low": -0.9, "high": 5.0}},
       derivative=lambda grad, input: F.div(grad, F.add(input, 1)))
_unary("sqrt", np.sqrt, promotion=rules.to_float, scalar="sqrt(input)", grad_domain=_POSITIVE,
       derivative=lambda grad, result: F.div(grad, F.mul(result, 2)))
_unary("sin", np.sin, promotion=rules.to_float, scalar="sin(input)", derivative=lambda grad, input: F.mul(grad, F.cos(input)))
_unary("cos", np.cos, promotion=rules.to_float, scalar="cos(input)",
       derivative=lambda grad, input: F.neg(F.mul(grad, F.sin(input))))
_unary("tan", np.tan, promotion=rules.to_float, scalar="tan(input)", autocast=FLOAT32_ON_CUDA,
       derivative=lambda grad, result: F.mul(grad, F.add(F.mul(result, result), 1)))
_unary("tanh", np.tanh, promotion=rules.to_float, scalar="tanh(input)",
       derivative=lambda grad, result: F.mul(grad, F.sub(1, F.mul(result, result))))
_unary("erf", _erf, promotion=rules.to_float, scalar="erf(input)",
       derivative=lambda grad, input: F.mul(grad, F.mul(F.exp(F.neg(F.mul(input, input))), _TWO_OVER_SQRT_PI)))
_unary("floor", np.floor, dtypes="numeric", scalar="floor(input)", doc="integers pass through unchanged", derivative=_zero_grad)
_unary("ceil", np.ceil, dtypes="numeric", scalar="ceil(input)", doc="integers pass through unchanged", derivative=_zero_grad)
defop("round(Tensor input, *, int decimals=0)", "elementwise", promotion=rules.same, dtypes="numeric",
      meta=broadcast_meta("round"), reference=lambda x, decimals=0: np.round(x, decimals), inplace=True,
      samples=_round_samples,
      derivative=_zero_grad, doc="rounds half to even, like PyTorch")
_unary("logical_not", np.logical_not, promotion=rules.to_bool, scalar="input == 0", differentiable=False)
_unary("isnan", np.isnan, promotion=rules.to_bool, scalar="input != input", differentiable=False, inplace=False)

# -- unary composites -----------------------------------------------------------------------
_LN2 = math.log(2.0)
_unary("log2", np.log2, promotion=rules.to_float, kind="composite", scalar=f"log(input) / {_LN2!r}", grad_domain=_POSITIVE, autocast=FLOAT32_ON_CUDA,
       composite=lambda x: F.div(F.log(x), _LN2))
_unary("reciprocal", np.reciprocal, promotion=rules.to_float, kind="composite", scalar="1 / input", autocast=FLOAT32_ON_CUDA,
       composite=lambda x: F.div(1, x),
       derivative=lambda grad, result: F.neg(F.mul(grad, F.mul(result, result))))
_unary("rsqrt", lambda x: 1 / np.sqrt(x), promotion=rules.to_float, kind="composite", scalar="rsqrt(input)", autocast=FLOAT32_ON_CUDA,
       composite=lambda x: F.reciprocal(F.sqrt(x)), grad_domain=_POSITIVE)
_unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), promotion=rules.to_float, kind="composite", scalar="sigmoid(input)",
       composite=lambda x: F.reciprocal(F.add(F.exp(F.neg(_as_float(x))), 1)), doc="1 / (1 + exp(-input))",
       derivative=lambda grad, result: F.mul(grad, F.mul(result, F.sub(1, result))))
_unary("isinf", np.isinf, promotion=rules.to_bool, dtypes="numeric", kind="composite", inplace=False,
       differentiable=False, composite=lambda x: F.eq(F.abs(x), math.inf),
       scalar="input == input and input - input != 0")  # x - x is 0 when finite, NaN when infinite
_unary("isfinite", np.isfinite, promotion=rules.to_bool, dtypes="numeric", kind="composite", inplace=False,
       differentiable=False,
       composite=lambda x: F.logical_not(F.logical_or(F.isnan(x), F.isinf(x))), scalar="input - input == 0")

# -- binary primitives ----------------------------------------------------------------------
def _scaled(a, b, alpha):
    """alpha * b in the dtype of ``a``; integers wrap (alpha=-1 on uint8 is 255), as PyTorch computes it."""
    if alpha == 1:
        return b
    if a.dtype.kind in "iu":
        dt = np.result_type(a, b)
        return np.array(b).astype(dt) * np.array(alpha).astype(dt)
    return alpha * b


_binary("add", lambda a, b, alpha=1: a + _scaled(a, b, alpha), extra=", *, Scalar alpha=1", inplace=True,
        samples=_alpha_samples,
        scalar=lambda alpha: "input + other" if alpha == 1 else "input + alpha * other",
        doc="input + alpha * other", derivative=lambda grad, alpha: (grad, grad if alpha == 1 else F.mul(grad, alpha)))
_binary("sub", lambda a, b, alpha=1: a - _scaled(a, b, alpha), extra=", *, Scalar alpha=1", dtypes="numeric",
        inplace=True, samples=_alpha_samples, doc="input - alpha * other",
        scalar=lambda alpha: "input - other" if alpha == 1 else "input - alpha * other",
        derivative=lambda grad, alpha: (grad, F.neg(grad) if alpha == 1 else F.mul(grad, -alpha)))
_binary("mul", np.multiply, inplace=True, scalar="input * other",
        derivative={"input": lambda grad, other: F.mul(grad, other), "other": lambda grad, input: F.mul(grad, input)})


def _div_promotion(rt, op, values):
    mode = values[op.param_index["rounding_mode"]]
    if mode is None:
        return rules.to_float(rt, op, values)
    if rt is bool_:
        raise DtypeError(f"div: rounding_mode={mode!r} is not supported for bool tensors, as in PyTorch")
    return rules.same(rt, op, values)


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


def _div_input_derivative(grad, other, rounding_mode):
    return F.zeros_like(grad) if rounding_mode is not None else F.div(grad, other)


def _div_other_derivative(grad, other, rounding_mode, result):
    """d(a/b)/db = -(a/b)/b, from the saved result, so the dividend need not be kept."""
    if rounding_mode is not None:
        return F.zeros_like(grad)
    return F.neg(F.div(F.mul(grad, result), other))


def _pow_derivative(grad, input, other, result):
    """d/dx x^y = y x^(y-1) (0 where y == 0); d/dy x^y = x^y log x, taken as 0 where x == 0 and y >= 0
    (PyTorch's choices)."""
    if not hasattr(other, "_data"):
        if other == 0:
            return F.zeros_like(grad), None
        return F.mul(grad, F.mul(F.pow(input, other - 1), other)), None
    slope = F.mul(other, F.pow(input, F.sub(other, 1)))
    grad_input = F.mul(grad, F.where(F.eq(other, 0), F.zeros_like(slope), slope))
    log_base = F.where(F.logical_and(F.eq(input, 0), F.ge(other, 0)), F.zeros_like(result), F.log(input))
    return grad_input, F.mul(grad, F.mul(result, log_base))


def _extremum_derivative(pick):
    """maximum/minimum: the gradient goes to the chosen operand; ties split it evenly, as in PyTorch."""
    def derivative(grad, input, other):
        chosen = F.to_dtype(pick(input, other), grad.dtype)
        tied = F.mul(F.to_dtype(F.eq(input, other), grad.dtype), 0.5)
        share = F.add(chosen, tied)
        return F.mul(grad, share), F.mul(grad, F.sub(1, share))
    return derivative


_binary("div", _div_reference, promotion=_div_promotion, extra=", *, str? rounding_mode=None",
        normalize=_check_rounding_mode, inplace=True, samples=_div_samples,
        scalar=lambda rounding_mode: "input / other" if rounding_mode is None else None,  # floor/trunc: op by op
        derivative={"input": _div_input_derivative, "other": _div_other_derivative},
        doc="true division; rounding_mode 'trunc' or 'floor' keeps integer dtypes")
_NONZERO_DIVISOR = {"other": {"nonzero": True}}  # sample hint: integer division by zero raises
_binary("floor_divide", np.floor_divide, dtypes="numeric", inplace=True, differentiable=False,
        domain=_NONZERO_DIVISOR)
_binary("remainder", np.remainder, dtypes="numeric", inplace=True, doc="Python's modulo: the sign of other",
        domain=_NONZERO_DIVISOR,
        derivative=lambda grad, input, other: (grad, F.neg(F.mul(grad, F.floor_divide(input, other)))))
_binary("pow", np.power, dtypes="numeric", inplace=True, scalar="pow(input, other)", derivative=_pow_derivative, autocast=FLOAT32_ON_CUDA,
        domain={"other": {"low": 0, "high": 4}},  # integers to negative powers raise
        grad_domain=_POSITIVE)  # a negative base has no real non-integer power
_binary("maximum", np.maximum, doc="elementwise max; NaN propagates", scalar="max(input, other)",
        derivative=_extremum_derivative(lambda a, b: F.gt(a, b)))
_binary("minimum", np.minimum, doc="elementwise min; NaN propagates", scalar="min(input, other)",
        derivative=_extremum_derivative(lambda a, b: F.lt(a, b)))
for _name, _ref, _symbol in [("eq", np.equal, "=="), ("ne", np.not_equal, "!="), ("lt", np.less, "<"),
                             ("le", np.less_equal, "<="), ("gt", np.greater, ">"), ("ge", np.greater_equal, ">=")]:
    _binary(_name, _ref, promotion=rules.to_bool, differentiable=False, inplace=True,
            scalar=f"input {_symbol} other")
for _name, _ref, _formula in [("logical_and", np.logical_and, "input != 0 and other != 0"),
                              ("logical_or", np.logical_or, "input != 0 or other != 0"),
                              ("logical_xor", np.logical_xor, "(input != 0) != (other != 0)")]:
    _binary(_name, _ref, promotion=rules.to_bool, differentiable=False, inplace=True, scalar=_formula)


# -- selection and interpolation --------------------------------------------------------------

def _where_meta(condition, input, other):
    require(getattr(condition, "_dtype", None) is not None and condition._dtype.name == "bool", "where",
            "condition must be a bool tensor", condition)
    return broadcast_meta("where")(condition, input, other)


def _where_derivative(grad, condition):
    zeros = F.zeros_like(grad)
    return None, F.where(condition, grad, zeros), F.where(condition, zeros, grad)


defop("where(Index condition, Tensor input, Tensor other)", "elementwise", promotion=rules.same,
      meta=_where_meta, reference=np.where, method=False, derivative=_where_derivative,
      domain={"condition": {"dtype": "bool"}}, scalar="where(condition, input, other)",
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


def _clamp_derivative(grad, input, min, max):
    """The gradient passes where min <= input <= max (bounds included), as in PyTorch. Where min > max the
    result is max whatever the input, so max alone gets the gradient there."""
    zeros = F.zeros_like(grad)
    below = None if min is None else F.lt(input, min)
    above = None if max is None else F.gt(input, max)
    inside = grad
    for beyond in (below, above):
        if beyond is not None:
            inside = F.where(beyond, zeros, inside)
    tensor_min, tensor_max = hasattr(min, "_data"), hasattr(max, "_data")
    if below is not None and above is not None and (tensor_min or tensor_max):
        crossed = F.gt(min, max)
        below, above = F.logical_and(below, F.logical_not(crossed)), F.logical_or(above, crossed)
    return (inside, F.where(below, grad, zeros) if tensor_min else None,
            F.where(above, grad, zeros) if tensor_max else None)


defop("clamp(Tensor input, Tensor? min=None, Tensor? max=None)", "elementwise", kind="composite",
      promotion=rules.same, dtypes="numeric", meta=broadcast_meta("clamp"), normalize=_clamp_check,
      derivative=_clamp_derivative,
      composite=_clamp, reference=_clamp_reference, inplace=True, doc="min(max(input, min), max)")

defop("lerp(Tensor input, Tensor end, Tensor weight)", "elementwise", kind="composite",
      promotion=rules.same, dtypes="float", meta=broadcast_meta("lerp"),
      composite=lambda x, end, w: F.add(x, F.mul(w, F.sub(end, x))),
      reference=lambda x, end, w: x + w * (end - x), inplace=True, doc="input + weight * (end - input)",
      scalar="input + weight * (end - input)")

__all__ = ["shape"]
