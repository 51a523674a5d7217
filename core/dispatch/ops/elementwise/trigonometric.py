"""Inverse trigonometric and hyperbolic functions, hypot, angle conversion and log10, as composites.

Each is written in Ember ops (sin, cos, exp, expm1, log1p, sqrt), so it runs on every backend; a backend with a
native function may override it with a kernel. atan is solved by Newton's method on tan(y) = t: from a guess
within 0.005 three steps reach float64 precision (the error squares each step), and asin, acos and atan2 follow
from it by the half-angle identities, which keep their accuracy near ±1.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...formula_composite import formula_composite
from ...schema.meta import elementwise as broadcast_meta
from ...schema import defop
from ..namespace import F
from .complex_support import conj, is_complex, or_complex, refusing_complex, scaled, shifted, times_i
from .float_args import floating, is_tensor

_HALF_PI = math.pi / 2
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_LARGE = 2.0 ** 28  # beyond this, asinh(x) = log(2x) and acosh(x) = log(2x) to float64 precision
_INSIDE_ONE = {"input": {"low": -0.9, "high": 0.9}}  # grad_domain where the derivative is finite


def _unary(name, composite, reference, derivative, scalar=None, promotion=rules.to_float, **fields):
    return defop(f"{name}(Tensor input)", "elementwise", kind="composite", promotion=promotion,
                 meta=broadcast_meta(name), composite=composite, reference=reference, derivative=derivative,
                 inplace=True, scalar=scalar, **fields)


def _complex_asinh(z):
    """log(z + sqrt(z^2 + 1)) on the right half-plane (asinh is odd), log(2z) beyond 2^28 where z^2 overflows."""
    flip = F.signbit(F.real(z))
    w = F.where(flip, F.neg(z), z)
    near = F.log(F.add(w, F.sqrt(shifted(F.mul(w, w), 1))))
    out = F.where(F.gt(F.abs(w), _LARGE), F.add(F.log(w), _LN2), near)
    return F.where(flip, F.neg(out), out)


def _complex_asin(z):
    """-i asinh(iz), C's definition."""
    return times_i(_complex_asinh(times_i(z)), -1)


def _complex_atan(z):
    """-i atanh(iz)"""
    return times_i(_complex_atanh(times_i(z)), -1)


def _complex_acosh(z):
    """log(z + sqrt(z + 1) sqrt(z - 1)): the two roots keep the cut on (-inf, 1], as C's cacosh; log(2z) beyond
    2^28."""
    near = F.log(F.add(z, F.mul(F.sqrt(shifted(z, 1)), F.sqrt(shifted(z, -1)))))
    return F.where(F.gt(F.abs(z), _LARGE), F.add(F.log(z), _LN2), near)


def _complex_atanh(z):
    """log1p(2z / (1 - z)) / 2 on the upper half-plane (atanh(conj z) = conj atanh(z): a division would lose the
    sign of a zero imaginary part, the side of the cut); beyond 2^28 the real part of 1/z (a zero with x's sign at
    infinity) plus i pi/2 with y's sign, as C's catanh."""
    flip = F.signbit(F.imag(z))
    w = F.where(flip, F.conj_physical(z), z)
    near = scaled(F.log1p(F.div(scaled(w, 2), shifted(F.neg(w), 1))), 0.5)
    near = F.where(flip, F.conj_physical(near), near)
    x, y, magnitude = F.real(z), F.imag(z), F.abs(z)
    at_infinity = F.where(F.isnan(x), F.zeros_like(x), F.mul(F.sign(x), 0.0))
    real = F.where(F.isinf(magnitude), at_infinity, F.div(F.div(x, magnitude), magnitude))
    imag = F.where(F.isnan(y), y, F.copysign(F.full_like(y, _HALF_PI), y))
    return F.where(F.gt(magnitude, _LARGE), F.complex(real, imag), near)


def _complex_exp_halves(combine: str):
    """sinh (combine "sub") and cosh ("add"): (exp(z) -+ exp(-z)) / 2 (not exp(-z) * -1: -inf - inf j times
    -1 + 0j is NaN)."""
    def form(z):
        return scaled(getattr(F, combine)(F.exp(z), F.exp(F.neg(z))), 0.5)
    return form


@floating
def _atan(x):
    """|x| > 1 folds onto 1/x (atan(x) = ±pi/2 - atan(1/x)); Newton's steps solve tan(y) = t from
    y0 = t / (1 + 0.28125 t^2)."""
    folded = F.gt(F.abs(x), 1)
    t = F.where(folded, F.reciprocal(x), x)
    y = F.div(t, F.add(F.mul(F.mul(t, t), 0.28125), 1))
    for _ in range(3):
        cos = F.cos(y)
        y = F.sub(y, F.mul(F.sub(F.sin(y), F.mul(t, cos)), cos))
    return F.where(folded, F.sub(F.copysign(_HALF_PI, x), y), y)


@floating
def _asin(x):
    """atan(x / sqrt((1 - x)(1 + x))): exact at ±1 (x / 0 is ±inf), NaN beyond."""
    return _atan(F.div(x, F.sqrt(F.mul(F.sub(1, x), F.add(x, 1)))))


@floating
def _acos(x):
    """2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1, where pi/2 - asin(x) loses every digit."""
    return F.mul(_atan(F.sqrt(F.div(F.sub(1, x), F.add(x, 1)))), 2)


@floating
def _atan2(y, x):
    """atan(y / x) moved into the quadrant of (x, y), with C's answers for zeros and infinities."""
    negative_x = F.signbit(x)
    out = F.atan(F.div(y, x))
    out = F.where(negative_x, F.add(out, F.copysign(math.pi, y)), out)
    out = F.where(F.eq(y, 0), F.where(negative_x, F.copysign(math.pi, y), y), out)  # ±0 or ±pi
    both_infinite = F.logical_and(F.isinf(x), F.isinf(y))
    corner = F.copysign(F.add(F.mul(F.to_dtype(negative_x, y.dtype), math.pi / 2), math.pi / 4), y)
    out = F.where(both_infinite, corner, out)
    return F.where(F.logical_or(F.isnan(x), F.isnan(y)), F.add(x, y), out)


@floating
def _sinh(x):
    """(expm1(x) - expm1(-x)) / 2 near 0 (no cancellation); e - 1/(4e) with e = exp(|x|)/2 beyond 1, which
    stays finite up to where sinh itself overflows."""
    near = F.div(F.sub(F.expm1(x), F.expm1(F.neg(x))), 2)
    half = F.exp(F.sub(F.abs(x), _LN2))
    far = F.copysign(F.sub(half, F.div(0.25, half)), x)
    return F.where(F.lt(F.abs(x), 1), near, far)


@floating
def _cosh(x):
    half = F.exp(F.sub(F.abs(x), _LN2))
    return F.add(half, F.div(0.25, half))


@floating
def _asinh(x):
    """sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = |x|: exact near 0; log(2a) for huge a."""
    a = F.abs(x)
    square = F.mul(a, a)
    near = F.log1p(F.add(a, F.div(square, F.add(F.sqrt(F.add(square, 1)), 1))))
    return F.copysign(F.where(F.gt(a, _LARGE), F.add(F.log(a), _LN2), near), x)


@floating
def _acosh(x):
    """log1p(t + sqrt(t (x + 1))) with t = x - 1: exact near 1; log(2x) for huge x; NaN below 1."""
    t = F.sub(x, 1)
    near = F.log1p(F.add(t, F.sqrt(F.mul(t, F.add(x, 1)))))
    return F.where(F.gt(x, _LARGE), F.add(F.log(x), _LN2), near)


@floating
def _hypot(x, y):
    """m sqrt(1 + (n/m)^2) with m, n the larger and smaller magnitude: no overflow of x^2 + y^2; an infinite
    operand gives inf even against NaN, as C's hypot."""
    a, b = F.abs(x), F.abs(y)
    big, small = F.maximum(a, b), F.minimum(a, b)
    ratio = F.div(small, big)
    out = F.where(F.eq(big, 0), big, F.mul(big, F.sqrt(F.add(F.mul(ratio, ratio), 1))))
    infinity = F.full((), math.inf, dtype=out.dtype, device=out.device)
    return F.where(F.logical_or(F.isinf(a), F.isinf(b)), infinity, out)


def _one_minus_square(x):
    return F.sub(1, F.mul(x, x))


def _acosh_slope_inverse(x):
    """sqrt(x^2 - 1); for complex x sqrt(x - 1) sqrt(x + 1), which keeps acosh's branch (as PyTorch)."""
    if is_complex(x):
        return F.mul(F.sqrt(F.sub(x, 1)), F.sqrt(F.add(x, 1)))
    return F.sqrt(F.sub(F.mul(x, x), 1))


# complex inputs: the textbook formulas above (principal branches), for backends without kernels of their own;
# derivatives: grad times the conjugate slope (PyTorch's convention; conj is free on real tensors)
_unary("asin", or_complex(_complex_asin)(_asin), np.arcsin, grad_domain=_INSIDE_ONE, dtypes="all+complex",
       derivative=lambda grad, input: F.div(grad, conj(F.sqrt(_one_minus_square(input)))))
_unary("acos", or_complex(lambda z: F.rsub(_complex_asin(z), _HALF_PI))(_acos), np.arccos, dtypes="all+complex",
       grad_domain=_INSIDE_ONE,
       derivative=lambda grad, input: F.neg(F.div(grad, conj(F.sqrt(_one_minus_square(input))))))
_unary("atan", or_complex(_complex_atan)(_atan), np.arctan, dtypes="all+complex",
       derivative=lambda grad, input: F.div(grad, conj(F.add(F.mul(input, input), 1))))
_unary("sinh", or_complex(_complex_exp_halves("sub"))(_sinh), np.sinh, dtypes="all+complex",
       derivative=lambda grad, input: F.mul(grad, conj(F.cosh(input))))
_unary("cosh", or_complex(_complex_exp_halves("add"))(_cosh), np.cosh, dtypes="all+complex",
       derivative=lambda grad, input: F.mul(grad, conj(F.sinh(input))))
_unary("asinh", or_complex(_complex_asinh)(_asinh), np.arcsinh, dtypes="all+complex",
       derivative=lambda grad, input: F.div(grad, conj(F.sqrt(F.add(F.mul(input, input), 1)))))
_unary("acosh", or_complex(_complex_acosh)(_acosh), np.arccosh, grad_domain={"input": {"low": 1.1, "high": 5.0}},
       dtypes="all+complex",
       derivative=lambda grad, input: F.div(grad, conj(_acosh_slope_inverse(input))))
# log1p(2x / (1 - x)) / 2: exact near 0, ±inf at ±1, NaN beyond
_unary("atanh", or_complex(_complex_atanh)(floating(formula_composite("atanh"))), np.arctanh, dtypes="all+complex",
       grad_domain=_INSIDE_ONE,
       scalar="log1p(2 * input / (1 - input)) / 2",
       derivative=lambda grad, input: F.div(grad, conj(_one_minus_square(input))))
_unary("deg2rad", floating(formula_composite("deg2rad")), np.deg2rad, scalar=f"input * {math.pi / 180!r}",
       promotion=refusing_complex(rules.to_float, "deg2rad is not supported for complex tensors."),
       derivative=lambda grad: F.mul(grad, math.pi / 180))
_unary("rad2deg", floating(formula_composite("rad2deg")), np.rad2deg, scalar=f"input * {180 / math.pi!r}",
       promotion=refusing_complex(rules.to_float, "rad2deg is not supported for complex tensors."),
       derivative=lambda grad: F.mul(grad, 180 / math.pi))
_unary("log10", or_complex(lambda z: scaled(F.log(z), 1 / _LN10))(floating(formula_composite("log10"))),
       np.log10, scalar=f"log(input) / {_LN10!r}",
       grad_domain={"input": {"low": 0.1, "high": 5.0}}, dtypes="all+complex",
       derivative=lambda grad, input: F.div(grad, conj(F.mul(input, _LN10))))


def _square(v):
    return F.mul(v, v) if is_tensor(v) else v * v


def _atan2_scale(grad, input, other):
    return F.div(grad, F.add(_square(input), _square(other)))


#: d/dy atan2(y, x) = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
_ATAN2_DERIVATIVE = {"input": lambda grad, input, other: F.mul(_atan2_scale(grad, input, other), other),
                     "other": lambda grad, input, other: F.neg(F.mul(_atan2_scale(grad, input, other), input))}


def _hypot_derivative(grad, input, other, result):
    scale = F.div(grad, result)
    return F.mul(scale, input), F.mul(scale, other)


defop("atan2(Tensor input, Tensor other)", "elementwise", kind="composite", promotion=rules.to_float,
      meta=broadcast_meta("atan2"), composite=_atan2, reference=np.arctan2, derivative=_ATAN2_DERIVATIVE,
      inplace=True, doc="the angle of the point (other, input), in (-pi, pi]")
defop("hypot(Tensor input, Tensor other)", "elementwise", kind="composite", promotion=rules.same, dtypes="float",
      meta=broadcast_meta("hypot"), composite=_hypot, reference=np.hypot, derivative=_hypot_derivative,
      inplace=True, grad_domain={"input": {"low": 0.5, "high": 3.0}, "other": {"low": 0.5, "high": 3.0}},
      doc="sqrt(input^2 + other^2) without overflow")
