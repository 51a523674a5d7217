"""The complementary error function and the normal distribution: erfc, erfcx, ndtr, log_ndtr, ndtri.

1 - erf(x) loses every digit as erf(x) nears 1, so erfc is computed in three ranges:
- x < 1/2: 1 - erf(x) itself (at most 2 - 0.52, so no cancellation);
- 1/2 <= x < 7: the trapezoidal rule on erfcx(x) = (x/π) ∫ exp(-t²) / (t² + x²) dt over the real line, with
  step h = 1/2 and the correction for the integrand's poles at ±ix (Chiarella and Reichel, 1968). The rule
  converges like exp(-π²/h²) ≈ 1e-17 once the 14 terms with exp(-n²h²) above the float64 epsilon are in;
- x >= 7: the asymptotic series erfcx(x) ~ 1/(x√π) Σ (-1)ᵏ (2k-1)!! / (2x²)ᵏ, whose least term there is
  below 1e-20.
erfcx is the same without the factor exp(-x²), so it does not underflow. The normal distribution's
functions follow: ndtr from erfc, log_ndtr from erfcx in the lower tail, and ndtri by Newton's method on
log_ndtr, which is accurate all the way into the tails (ndtri(1e-300) ≈ -37).
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.meta import elementwise as broadcast_meta
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from .special_support import SQRT_2, SQRT_2PI, SQRT_PI, floating, scipy_special, select

_STEP = 0.5
_TERMS = 14  # exp(-n² h²) for n <= 14 reaches 5e-22
_ASYMPTOTIC_FROM = 7.0
_ASYMPTOTIC_TERMS = 25
_TWO_OVER_SQRT_PI = 2.0 / SQRT_PI


def _trapezoid_sum(x):
    """(2hx/π) [1/(2x²) + Σₙ exp(-n²h²) / (n²h² + x²)]: the trapezoidal part of erfcx for x >= 1/2."""
    x2 = F.mul(x, x)
    total = F.div(0.5, x2)
    for n in range(1, _TERMS + 1):
        nh2 = (n * _STEP) ** 2
        total = F.add(total, F.div(math.exp(-nh2), F.add(x2, nh2)))
    return F.mul(total, F.mul(x, 2 * _STEP / math.pi))


def _pole_correction(x):
    """The pole's part of erfcx, 2 exp(x²) / (1 - exp(2πx/h)), written so that nothing overflows."""
    decay = F.exp(F.mul(x, -2 * math.pi / _STEP))
    return F.div(F.mul(F.exp(F.sub(F.mul(x, x), F.mul(x, 2 * math.pi / _STEP))), -2.0), F.sub(1.0, decay))


def _asymptotic(x):
    """erfcx(x) for large x: 1/(x√π) Σₖ (-1)ᵏ (2k-1)!! / (2x²)ᵏ."""
    inv = F.reciprocal(F.mul(F.mul(x, x), 2.0))
    term, total = F.ones_like(x), F.ones_like(x)
    for k in range(1, _ASYMPTOTIC_TERMS + 1):
        term = F.mul(term, F.mul(inv, -(2 * k - 1)))
        total = F.add(total, term)
    return F.div(total, F.mul(x, SQRT_PI))


def _middle(x):
    """Where each range applies; arguments outside a range are replaced by a harmless value there."""
    large = F.ge(x, _ASYMPTOTIC_FROM)
    middle = F.logical_and(F.ge(x, 0.5), F.logical_not(large))
    return large, middle, F.where(middle, x, F.ones_like(x)), F.where(large, x, F.full_like(x, _ASYMPTOTIC_FROM))


def _erfcx(x):
    large, middle, xm, xl = _middle(x)
    small = F.mul(F.exp(F.mul(x, x)), F.sub(1.0, F.erf(x)))
    return select((large, _asymptotic(xl)), (middle, F.add(_trapezoid_sum(xm), _pole_correction(xm))), small)


def _erfc(x):
    large, middle, xm, xl = _middle(x)
    trapezoid = F.add(F.mul(_trapezoid_sum(xm), F.exp(F.neg(F.mul(xm, xm)))),
                      F.div(-2.0, F.sub(F.exp(F.mul(xm, 2 * math.pi / _STEP)), 1.0)))
    asymptotic = F.mul(_asymptotic(xl), F.exp(F.neg(F.mul(xl, xl))))
    asymptotic = F.where(F.isinf(x), F.zeros_like(x), asymptotic)
    return select((large, asymptotic), (middle, trapezoid), F.sub(1.0, F.erf(x)))


def _ndtr(x):
    return F.mul(_erfc(F.div(x, -SQRT_2)), 0.5)


def _log_ndtr(x):
    """log Φ(x): log1p(-Φ(-x)) from above -1, log(erfcx(-x/√2) / 2) - x²/2 in the lower tail."""
    lower = F.lt(x, -1.0)
    upper = F.log1p(F.mul(_erfc(F.div(F.where(lower, F.zeros_like(x), x), SQRT_2)), -0.5))
    xl = F.where(lower, x, F.full_like(x, -1.0))
    tail = F.sub(F.log(F.mul(_erfcx(F.div(xl, -SQRT_2)), 0.5)), F.mul(F.mul(xl, xl), 0.5))
    return F.where(lower, tail, upper)


def _log_ndtr_derivative(grad, input, result):
    """φ(x)/Φ(x): exp(-x²/2 - log Φ(x)) / √(2π), and in the lower tail, where that exponent cancels,
    √(2/π) / erfcx(-x/√2)."""
    lower = F.lt(input, -1.0)
    upper = F.div(F.exp(F.neg(F.add(F.mul(F.mul(input, input), 0.5), result))), SQRT_2PI)
    xl = F.where(lower, input, F.full_like(input, -1.0))
    tail = F.div(math.sqrt(2.0 / math.pi), F.special_erfcx(F.div(xl, -SQRT_2)))
    return F.mul(grad, F.where(lower, tail, upper))


#: Abramowitz and Stegun 26.2.23: |error| < 4.5e-4 for the lower half; Newton's method does the rest
_AS_NUMERATOR = (2.515517, 0.802853, 0.010328)
_AS_DENOMINATOR = (1.0, 1.432788, 0.189269, 0.001308)
_NEWTON_STEPS = 3  # from 4.5e-4: 1e-7, 1e-13, and float64 rounding


def lower_ndtri(q, log_q):
    """The z <= 0 with Φ(z) = q for 0 < q <= 1/2, by Newton's method on log Φ(z) = log q, which converges
    from any start since log Φ is concave."""
    t = F.sqrt(F.mul(log_q, -2.0))
    numerator = F.add(F.mul(F.add(F.mul(t, _AS_NUMERATOR[2]), _AS_NUMERATOR[1]), t), _AS_NUMERATOR[0])
    denominator = F.add(F.mul(F.add(F.mul(F.add(F.mul(t, _AS_DENOMINATOR[3]), _AS_DENOMINATOR[2]), t),
                                  _AS_DENOMINATOR[1]), t), 1.0)
    z = F.neg(F.sub(t, F.div(numerator, denominator)))
    for _ in range(_NEWTON_STEPS):
        log_phi = _log_ndtr(z)
        # Φ/φ = √(2π) exp(z²/2 + log Φ)
        ratio = F.mul(F.exp(F.add(F.mul(F.mul(z, z), 0.5), log_phi)), SQRT_2PI)
        z = F.sub(z, F.mul(F.sub(log_phi, log_q), ratio))
    return z


def _ndtri(p):
    upper = F.gt(p, 0.5)
    inside = F.logical_and(F.gt(p, 0.0), F.lt(p, 1.0))
    q = F.where(inside, F.where(upper, F.sub(1.0, p), p), F.full_like(p, 0.25))  # 1 - p is exact above 1/2
    z = lower_ndtri(q, F.log(q))
    z = F.where(upper, F.neg(z), z)
    edge = select((F.eq(p, 0.0), F.full_like(p, -math.inf)), (F.eq(p, 1.0), F.full_like(p, math.inf)),
                  F.full_like(p, math.nan))
    return F.where(inside, z, edge)


def _reference(name):
    def reference(x):
        return getattr(scipy_special(), name)(x.astype(np.result_type(x, 0.5)))
    reference.__name__ = f"scipy.special.{name}"
    return reference


def _tail_samples(values):
    def samples(make, dtype):
        if dtype.is_floating_point:
            yield Sample((make.tensor(np.array(values), dtype),), note="each range, tails and edges")
    return samples


_FIELDS = dict(promotion=rules.to_float, kind="composite", autocast=FLOAT32_ON_CUDA,
               tolerances={"float32": (2e-5, 1e-5), "float64": (1e-12, 1e-14)})
_RANGES = [-30.0, -5.0, -1.0, -0.2, 0.0, 0.3, 0.5, 0.9, 2.0, 4.5, 6.999, 7.0, 10.0, 26.0, 30.0]

defop("erfc(Tensor input)", "elementwise", meta=broadcast_meta("erfc"), inplace=True, composite=floating(_erfc),
      reference=_reference("erfc"), samples=_tail_samples(_RANGES), **_FIELDS,
      derivative=lambda grad, input: F.mul(grad, F.mul(F.exp(F.neg(F.mul(input, input))), -_TWO_OVER_SQRT_PI)),
      doc="1 - erf(input), accurate where erf(input) is close to 1")
defop("special_erfcx(Tensor input)", "elementwise", meta=broadcast_meta("special_erfcx"), method=False,
      composite=floating(_erfcx), reference=_reference("erfcx"), samples=_tail_samples(_RANGES[1:] + [1e3]),
      **_FIELDS, derivative=lambda grad, input, result: F.mul(
          grad, F.sub(F.mul(F.mul(input, result), 2.0), _TWO_OVER_SQRT_PI)),
      doc="the scaled complementary error function exp(x²) erfc(x)")
defop("special_ndtr(Tensor input)", "elementwise", meta=broadcast_meta("special_ndtr"), method=False,
      composite=floating(_ndtr), reference=_reference("ndtr"), samples=_tail_samples(_RANGES), **_FIELDS,
      derivative=lambda grad, input: F.mul(grad, F.div(F.exp(F.mul(F.mul(input, input), -0.5)), SQRT_2PI)),
      doc="the standard normal cumulative distribution function Φ(x)")
defop("special_log_ndtr(Tensor input)", "elementwise", meta=broadcast_meta("special_log_ndtr"), method=False,
      composite=floating(_log_ndtr), reference=_reference("log_ndtr"), samples=_tail_samples(_RANGES + [-300.0]),
      **_FIELDS, derivative=_log_ndtr_derivative,
      doc="log Φ(x), accurate in both tails")
defop("special_ndtri(Tensor input)", "elementwise", meta=broadcast_meta("special_ndtri"), method=False,
      composite=floating(_ndtri), reference=_reference("ndtri"), domain={"input": {"low": 0.01, "high": 0.99}},
      samples=_tail_samples([0.0, 1e-300, 1e-30, 1e-5, 0.02, 0.3, 0.5, 0.7, 0.999, 1 - 1e-12, 1.0, 1.5, -0.1]),
      **_FIELDS, derivative=lambda grad, result: F.mul(grad, F.mul(F.exp(F.mul(F.mul(result, result), 0.5)),
                                                                   SQRT_2PI)),
      doc="the inverse of ndtr: the z with Φ(z) = p; ∓inf at 0 and 1, NaN outside [0, 1]")
