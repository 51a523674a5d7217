"""More elementwise math as composites: logaddexp(2), float_power, heaviside, fmax/fmin, square, nan_to_num,
clamp_min/clamp_max and the infinity tests."""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.dtypes import bool_, complex128, float64
from ...formula_composite import formula_composite
from ...schema.meta import elementwise as broadcast_meta
from ...schema import Sample, defop
from ..namespace import F
from .complex_support import conj, is_complex, or_complex, refusing_complex
from .float_args import LARGEST, as_tensors, floating, is_tensor, promoted_dtype

_LN2 = math.log(2.0)


def _binary(name, composite, reference, **fields):
    return defop(f"{name}(Tensor input, Tensor other)", "elementwise", kind="composite",
                 meta=broadcast_meta(name), composite=composite, reference=reference, **fields)


# -- log-domain sums ---------------------------------------------------------------------------------------

@floating
def _logaddexp2(x, y):
    peak = F.maximum(x, y)
    out = F.add(peak, F.div(F.log1p(F.pow(2.0, F.neg(F.abs(F.sub(x, y))))), _LN2))
    return F.where(F.eq(x, y), F.add(x, 1), out)


def _logaddexp_reference(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind != "c" and y.dtype.kind != "c":
        return np.logaddexp(x, y)
    first_larger = x.real >= y.real  # (NumPy's logaddexp has no complex loop)
    larger, smaller = np.where(first_larger, x, y), np.where(first_larger, y, x)
    with np.errstate(all="ignore"):
        out = larger + np.log1p(np.exp(smaller - larger))
        at_infinity = np.where(smaller.real < 0, smaller, np.log(np.exp(smaller) + np.exp(larger)))
    return np.where(np.isinf(smaller.real) & (smaller.real == larger.real), at_infinity, out)


def _share_derivative(base):
    """d/dx log_b(b^x + b^y) = 1 / (1 + b^(y - x)): the sigmoid of the difference, scaled for base 2 (its
    conjugate for complex operands)."""
    def weight(a, b):
        return conj(F.sigmoid(F.mul(F.sub(a, b), base)))

    return {"input": lambda grad, input, other: F.mul(grad, weight(input, other)),
            "other": lambda grad, input, other: F.mul(grad, weight(other, input))}


def _complex_logaddexp(x, y):
    """The operand of larger real part plus log1p(exp(other - it)), as PyTorch (whose answer for two infinite real
    parts is the smaller operand when -inf, log(exp(x) + exp(y)) when +inf)."""
    first_larger = F.ge(F.real(x), F.real(y))
    larger, smaller = F.where(first_larger, x, y), F.where(first_larger, y, x)
    out = F.add(F.log1p(F.exp(F.sub(smaller, larger))), larger)
    top, bottom = F.real(larger), F.real(smaller)
    both_infinite = F.logical_and(F.isinf(bottom), F.eq(top, bottom))
    at_infinity = F.where(F.lt(bottom, 0), smaller, F.log(F.add(F.exp(smaller), F.exp(larger))))
    return F.where(both_infinite, at_infinity, out)


# max + log1p(exp(-|x - y|)); equal operands (infinities included) give x + log 2
_binary("logaddexp", floating(or_complex(_complex_logaddexp)(formula_composite("logaddexp"))), _logaddexp_reference,
        promotion=rules.same,
        dtypes="float+complex", inplace=False,
        derivative=_share_derivative(1.0),
        scalar="where(input == other, input + 0.6931471805599453, max(input, other) + "
               "log1p(exp(-abs(input - other))))",
        doc="log(exp(input) + exp(other)) without overflow")
_binary("logaddexp2", _logaddexp2, np.logaddexp2, promotion=rules.same, dtypes="float", inplace=False,
        derivative=_share_derivative(_LN2), doc="log2(2**input + 2**other) without overflow")


# -- powers --------------------------------------------------------------------------------------------------

def _float_power_promotion(rt, op, args):
    """float64, or complex128 where an operand is complex."""
    dt = complex128 if rt.kind == "complex" else float64
    return dt, dt


def _float_power(x, exponent):
    """pow in float64 (complex128 for complex operands), whatever the operands' dtypes."""
    dt = complex128 if is_complex(x) or is_complex(exponent) else float64
    return F.pow(*as_tensors(dt, x, exponent))


def _float_power_reference(x, exponent):
    dt = np.result_type(np.asarray(x), np.asarray(exponent), np.float64)
    return np.power(np.asarray(x, dt), np.asarray(exponent, dt))


defop("float_power(Tensor input, Tensor exponent)", "elementwise", kind="composite", dtypes="numeric+complex",
      promotion=_float_power_promotion, meta=broadcast_meta("float_power"),
      composite=_float_power, reference=_float_power_reference,
      inplace=True, domain={"exponent": {"low": 0, "high": 4}}, grad_domain={"input": {"low": 0.1, "high": 5.0}},
      doc="pow computed (and answered) in float64")


defop("square(Tensor input)", "elementwise", kind="composite", promotion=rules.same, dtypes="numeric+complex",
      meta=broadcast_meta("square"), composite=formula_composite("square"), reference=np.square, inplace=True,
      scalar="input * input",
      derivative=lambda grad, input: F.mul(grad, conj(F.mul(input, 2))), doc="input * input")


# -- step, NaN-ignoring extrema, clamping ---------------------------------------------------------------------

def _heaviside(x, values):
    """values where input is 0, else 1 where input > 0 and 0 below (NaN included), as PyTorch."""
    x, values = as_tensors(promoted_dtype(x, values), x, values)
    step = F.to_dtype(F.gt(x, 0), x.dtype)
    return F.where(F.eq(x, 0), values, step)


def _heaviside_reference(x, values):
    x, values = np.broadcast_arrays(x, values)
    return np.where(x == 0, values, (x > 0).astype(np.result_type(x, values)))


defop("heaviside(Tensor input, Tensor values)", "elementwise", kind="composite",
      promotion=refusing_complex(rules.same, "heaviside is not yet implemented for complex tensors."),
      meta=broadcast_meta("heaviside"), composite=_heaviside, reference=_heaviside_reference, inplace=True,
      differentiable=False, scalar="where(input == 0, values, where(input > 0, 1, 0))",
      doc="the step function, with values at 0")


def _nan_ignoring(pick):
    def extremum(x, y):
        x, y = as_tensors(promoted_dtype(x, y), x, y)
        out = pick(x, y)
        if not out.dtype.is_floating_point:
            return out
        return F.where(F.isnan(y), x, F.where(F.isnan(x), y, out))
    return extremum


def _fmax_fmin_derivative(chosen_by_input):
    """The gradient goes wholly to the operand chosen, input on ties, as PyTorch."""
    def input_mask(input, other):
        other_is_nan = F.isnan(other) if is_tensor(other) else other != other
        return F.logical_or(chosen_by_input(input, other), other_is_nan)

    return {"input": lambda grad, input, other: F.where(input_mask(input, other), grad, F.zeros_like(grad)),
            "other": lambda grad, input, other: F.where(input_mask(input, other), F.zeros_like(grad), grad)}


_binary("fmax", _nan_ignoring(lambda a, b: F.maximum(a, b)), np.fmax,
        promotion=refusing_complex(rules.same, "fmax not implemented for complex tensors."),
        derivative=_fmax_fmin_derivative(lambda a, b: F.ge(a, b)),
        scalar="where(other != other, input, where(input != input, other, max(input, other)))",
        doc="elementwise maximum that ignores NaN (NaN only where both are NaN)")
_binary("fmin", _nan_ignoring(lambda a, b: F.minimum(a, b)), np.fmin,
        promotion=refusing_complex(rules.same, "fmin not implemented for complex tensors."),
        derivative=_fmax_fmin_derivative(lambda a, b: F.le(a, b)),
        scalar="where(other != other, input, where(input != input, other, min(input, other)))",
        doc="elementwise minimum that ignores NaN (NaN only where both are NaN)")


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if is_complex(x):  # each part on its own, as PyTorch
        parts = (_nan_to_num(part, nan, posinf, neginf) for part in (F.real(x), F.imag(x)))
        return F.complex(*parts)
    if not x.dtype.is_floating_point:
        return F.clone(x)
    big = LARGEST[x.dtype.name]
    nan = 0.0 if nan is None else nan  # None is the default, as in PyTorch
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    out = F.where(F.isnan(x), F.full((), nan, dtype=x.dtype, device=x.device), x)
    out = F.where(F.eq(x, math.inf), F.full((), posinf, dtype=x.dtype, device=x.device), out)
    return F.where(F.eq(x, -math.inf), F.full((), neginf, dtype=x.dtype, device=x.device), out)


def _nan_to_num_reference(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf)


def _nan_to_num_samples(make, dtype):
    if dtype.is_floating_point:
        yield Sample((make.specials((12,)),), {"nan": 1.5, "posinf": 100.0, "neginf": -7.0}, note="replacements")
        if dtype.itemsize > 2:  # the default bounds are the dtype's; references of half precision run in float64
            yield Sample((make.specials((12,)), -2.0), note="nan only")


defop("nan_to_num(Tensor input, float? nan=0.0, float? posinf=None, float? neginf=None)", "elementwise",
      kind="composite", promotion=rules.same, dtypes="all+complex",
      meta=lambda x, *rest: broadcast_meta("nan_to_num")(x),
      composite=_nan_to_num, reference=_nan_to_num_reference, inplace=True, samples=_nan_to_num_samples,
      domain={"input": {}},  # the special values come with given bounds from the samples (see above)
      doc="NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest values by default)")


_CLAMP_PROMOTION = refusing_complex(rules.same, "clamp is not supported for complex types")


def _clamp_min(x, min):
    return F.clamp(x, min, None)


def _clamp_max(x, max):
    return F.clamp(x, None, max)


defop("clamp_min(Tensor input, Tensor min)", "elementwise", kind="composite", promotion=_CLAMP_PROMOTION,
      dtypes="numeric", meta=broadcast_meta("clamp_min"), composite=_clamp_min, reference=np.maximum,
      inplace=True, scalar="max(input, min)", doc="clamp(input, min=min)")
defop("clamp_max(Tensor input, Tensor max)", "elementwise", kind="composite", promotion=_CLAMP_PROMOTION,
      dtypes="numeric", meta=broadcast_meta("clamp_max"), composite=_clamp_max, reference=np.minimum,
      inplace=True, scalar="min(input, max)", doc="clamp(input, max=max)")


# -- infinity and reality tests -------------------------------------------------------------------------------

def _infinity_test(sign):
    def test(x):
        if not x.dtype.is_floating_point:
            return F.zeros_like(x, dtype=bool_)
        return F.eq(x, sign * math.inf)
    return test


defop("isposinf(Tensor input)", "elementwise", kind="composite",
      promotion=refusing_complex(rules.to_bool, "isposinf does not support complex inputs."),
      meta=broadcast_meta("isposinf"), composite=_infinity_test(1), reference=np.isposinf, differentiable=False,
      doc="input == +inf")
defop("isneginf(Tensor input)", "elementwise", kind="composite",
      promotion=refusing_complex(rules.to_bool, "isneginf does not support complex inputs."),
      meta=broadcast_meta("isneginf"), composite=_infinity_test(-1), reference=np.isneginf, differentiable=False,
      doc="input == -inf")


def _isreal(x):
    return F.eq(F.imag(x), 0) if is_complex(x) else F.ones_like(x, dtype=bool_)


defop("isreal(Tensor input)", "elementwise", kind="composite", promotion=rules.to_bool, dtypes="all+complex",
      meta=broadcast_meta("isreal"), composite=_isreal, reference=lambda x: np.isreal(x) | np.zeros(np.shape(x), bool),
      differentiable=False, doc="imag == 0 (true everywhere for real dtypes)")
