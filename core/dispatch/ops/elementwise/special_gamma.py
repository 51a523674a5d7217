"""The regularized incomplete gamma functions (igamma, igammac) and the Hurwitz zeta function.

igamma P(a, x) and igammac Q(a, x) = 1 - P(a, x): below x = a + 1 the power series
P = xᵃ e⁻ˣ / Γ(a+1) Σ xⁿ / ((a+1)...(a+n)) converges fast, above it Legendre's continued fraction for Q,
evaluated from its tail, does; each gives the other as its complement where that loses nothing. Near
x = a both need about √(80 a) terms, so the term count grows with the largest a of the call
(one read of that value; a up to 1e6). The float64 error is about 1e-14 for a up to 100, 1e-12 up to 1000.

zeta(x, q) = Σₖ (q + k)⁻ˣ: the first terms summed, the rest by the Euler-Maclaurin formula with ten
Bernoulli terms once q + k >= 10, good to about 1e-15. A negative q is first shifted past zero term by
term (one read of the smallest q; q down to -100 000).
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.errors import EmberError
from ...schema.meta import elementwise as broadcast_meta
from ...schema import Sample, defop
from ..namespace import F
from .special import BERNOULLI
from .special_support import as_tensors, floating, scipy_special, select

_MIN_TERMS = 60


#: The largest a computed (the terms needed grow as √a: 9 000 here)
MAX_A = 1e6


def _term_count(a, name: str) -> int:
    largest = F.amax(a).item() if a.numel() else 0.0
    largest = largest if math.isfinite(largest) and largest > 0 else 0.0
    if largest > MAX_A:
        raise EmberError(f"{name}: input (a) above {MAX_A:g} is not supported (its series needs √(80 a) terms), "
                         f"got {largest:g} (input of shape {tuple(a.shape)})")
    return _MIN_TERMS + math.ceil(math.sqrt(80.0 * (largest + 1.0)))


def _incomplete_gamma(a, x, name: str):
    """(P, Q) for a > 0, x > 0 (other arguments give harmless values that the edge cases replace)."""
    if tuple(a.shape) != tuple(x.shape):
        zero = F.zeros_like(F.add(a, x))
        a, x = F.add(a, zero), F.add(x, zero)
    valid = F.logical_and(F.gt(a, 0.0), F.gt(x, 0.0))
    valid = F.logical_and(valid, F.logical_and(F.isfinite(a), F.isfinite(x)))
    a = F.where(valid, a, F.ones_like(a))
    x = F.where(valid, x, F.ones_like(x))
    terms = _term_count(a, name)
    log_power = F.sub(F.mul(a, F.log(x)), x)  # a log x - x
    # the series, for x < a + 1
    term, total = F.ones_like(x), F.ones_like(x)
    for n in range(1, terms):
        term = F.mul(term, F.div(x, F.add(a, n)))
        total = F.add(total, term)
    p_series = F.mul(F.exp(F.sub(log_power, F.lgamma(F.add(a, 1.0)))), total)
    # the continued fraction, for x >= a + 1: Q = xᵃ e⁻ˣ / Γ(a) / (x + 1 - a - K), evaluated from the tail
    tail = F.zeros_like(x)
    for n in range(terms, 0, -1):
        tail = F.div(F.mul(F.sub(n, a), float(n)), F.sub(F.add(F.sub(x, a), 2 * n + 1), tail))
    q_fraction = F.div(F.exp(F.sub(log_power, F.lgamma(a))), F.sub(F.add(F.sub(x, a), 1.0), tail))
    use_series = F.lt(x, F.add(a, 1.0))
    return F.where(use_series, p_series, F.sub(1.0, q_fraction)), F.where(use_series, F.sub(1.0, p_series), q_fraction)


def _edges(a, x, lower: bool):
    """PyTorch's (and SciPy's) values where a or x is 0, infinite, negative or NaN: (mask, values)."""
    nan, one, zero = F.full_like(x, math.nan), F.ones_like(x), F.zeros_like(x)
    low, high = (zero, one) if lower else (one, zero)  # P or Q at x = 0 and at x = inf
    at_a_zero = F.where(F.gt(x, 0.0), high, nan)
    at_a_inf = F.where(F.isinf(x), nan, low)
    invalid = F.logical_or(F.logical_or(F.lt(a, 0.0), F.lt(x, 0.0)), F.logical_or(F.isnan(a), F.isnan(x)))
    value = select((invalid, nan), (F.eq(a, 0.0), at_a_zero), (F.eq(x, 0.0), low), (F.isinf(a), at_a_inf), high)
    mask = F.logical_or(F.logical_or(invalid, F.eq(a, 0.0)),
                        F.logical_or(F.eq(x, 0.0), F.logical_or(F.isinf(a), F.isinf(x))))
    return mask, value


def _regularized(lower: bool):
    def composite(a, x):
        a, x = as_tensors(a, x)
        p, q = _incomplete_gamma(a, x, "igamma" if lower else "igammac")
        mask, value = _edges(a, x, lower)
        return F.where(mask, value, p if lower else q)
    return floating(composite)


def _density_over_gamma(a, x):
    """d/dx P(a, x) = x^(a-1) e^(-x) / Γ(a)."""
    a, x = as_tensors(a, x)
    return F.exp(F.sub(F.sub(F.mul(F.sub(a, 1.0), F.log(x)), x), F.lgamma(a)))


def _incomplete_gamma_samples(make, dtype):
    if not dtype.is_floating_point:
        return
    yield Sample((make((2, 3), low=0.2, high=30.0), make((2, 3), low=0.1, high=40.0)), note="wide ranges")
    a = [0.0, 0.0, 1.0, 2.0, math.inf, 2.0, -1.0, math.inf, 3.0, 0.5, 200.0, 150.0]
    x = [1.0, 0.0, 0.0, math.inf, 3.0, math.nan, 1.0, math.inf, -1.0, 1e-30, 190.0, 170.0]
    yield Sample((make.tensor(np.array(a), dtype), make.tensor(np.array(x), dtype)), note="edges, large a",
                 gradcheck=False)


def _gamma_reference(name):
    def reference(a, x):
        dt = np.result_type(a, x, 0.5)
        return getattr(scipy_special(), name)(np.asarray(a, dt), np.asarray(x, dt))
    reference.__name__ = f"scipy.special.{name}"
    return reference


_GAMMA_FIELDS = dict(promotion=rules.to_float, kind="composite", inplace=True, samples=_incomplete_gamma_samples,
                     domain={"input": {"low": 0.2, "high": 8.0}, "other": {"low": 0.1, "high": 12.0}},
                     grad_domain={"other": {"low": 0.3, "high": 12.0}}, nondifferentiable_inputs=("input",),
                     tolerances={"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)})
defop("igamma(Tensor input, Tensor other)", "elementwise", meta=broadcast_meta("igamma"),
      composite=_regularized(lower=True), reference=_gamma_reference("gammainc"), **_GAMMA_FIELDS,
      derivative={"other": lambda grad, input, other: F.mul(grad, _density_over_gamma(input, other))},
      doc="the regularized lower incomplete gamma function P(input, other) (torch.special.gammainc); "
          "not differentiable with respect to input, as in PyTorch")
defop("igammac(Tensor input, Tensor other)", "elementwise", meta=broadcast_meta("igammac"),
      composite=_regularized(lower=False), reference=_gamma_reference("gammaincc"), **_GAMMA_FIELDS,
      derivative={"other": lambda grad, input, other: F.neg(F.mul(grad, _density_over_gamma(input, other)))},
      doc="the regularized upper incomplete gamma function Q(input, other) = 1 - P (torch.special.gammaincc); "
          "not differentiable with respect to input, as in PyTorch")


# -- Hurwitz zeta ------------------------------------------------------------------------------------------------

_ZETA_SHIFT = 10
#: B₂ⱼ / (2j)! of the Euler-Maclaurin correction terms
_EULER_MACLAURIN = [float(b / math.factorial(2 * j)) for j, b in enumerate(BERNOULLI, 1)]


#: The most negative q computed (each unit below 0 is one more term summed directly)
MIN_Q = -100_000


def _shift_for(q) -> int:
    """Terms summed directly: enough to carry the smallest q to at least _ZETA_SHIFT."""
    smallest = F.amin(q).item() if q.numel() else 0.0
    if smallest < MIN_Q:
        raise EmberError(f"special_zeta: other (q) below {MIN_Q} is not supported (each unit below 0 is one more "
                         f"term), got {smallest:g} (other of shape {tuple(q.shape)})")
    extra = math.ceil(-smallest) if math.isfinite(smallest) and smallest < 0 else 0
    return _ZETA_SHIFT + extra


def _zeta(x, q):
    x, q = as_tensors(x, q)
    shift = _shift_for(q)
    total = F.zeros_like(F.add(x, q))
    for k in range(shift):
        total = F.add(total, F.pow(F.add(q, float(k)), F.neg(x)))
    a = F.add(q, float(shift))
    a_power = F.pow(a, F.neg(x))
    total = F.add(total, F.add(F.div(F.mul(a_power, a), F.sub(x, 1.0)), F.mul(a_power, 0.5)))
    term, rising = F.div(a_power, a), x  # a^(-x-1) and x(x+1)...(x+2j-2)
    inverse_square = F.reciprocal(F.mul(a, a))
    for j, coefficient in enumerate(_EULER_MACLAURIN, 1):
        total = F.add(total, F.mul(F.mul(rising, term), coefficient))
        rising = F.mul(rising, F.mul(F.add(x, 2 * j - 1), F.add(x, 2 * j)))
        term = F.mul(term, inverse_square)
    pole = F.logical_and(F.le(q, 0.0), F.eq(q, F.floor(q)))
    # at x = inf only the first term counts: q⁻ˣ is inf below 1 and 1 at 1 (beyond 1 PyTorch answers NaN)
    first_term = F.where(F.eq(q, 1.0), F.ones_like(total), F.full_like(total, math.inf))
    at_infinity = F.logical_and(F.eq(x, math.inf), F.logical_and(F.gt(q, 0.0), F.le(q, 1.0)))
    return select((F.isnan(x), x), (at_infinity, first_term), (F.eq(x, 1.0), F.full_like(total, math.inf)),
                  (F.lt(x, 1.0), F.full_like(total, math.nan)), (pole, F.full_like(total, math.inf)), total)


def _zeta_other_derivative(grad, input, other):
    """d/dq ζ(x, q) = -x ζ(x + 1, q)."""
    input, other = as_tensors(input, other)
    return F.mul(grad, F.mul(F.neg(input), F.special_zeta(F.add(input, 1.0), other)))


def _zeta_samples(make, dtype):
    if not dtype.is_floating_point:
        return
    x = [1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 4.0, 1.5, 30.0, math.inf, math.inf]
    q = [1.0, 1.0, 0.0, -1.0, -1.5, -4.5, 1e-3, 1e3, 0.7, 1.0, 0.5]
    yield Sample((make.tensor(np.array(x), dtype), make.tensor(np.array(q), dtype)), note="poles, negative q, edges",
                 gradcheck=False)


def _zeta_reference(x, q):
    dt = np.result_type(x, q, 0.5)
    return scipy_special().zeta(np.asarray(x, dt), np.asarray(q, dt))


defop("special_zeta(Tensor input, Tensor other)", "elementwise", meta=broadcast_meta("special_zeta"),
      promotion=rules.to_float, kind="composite", method=False, composite=floating(_zeta),
      reference=_zeta_reference, samples=_zeta_samples, nondifferentiable_inputs=("input",),
      domain={"input": {"low": 1.2, "high": 6.0}, "other": {"low": 0.5, "high": 6.0}},
      tolerances={"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)},
      derivative={"other": _zeta_other_derivative},
      doc="the Hurwitz zeta function Σₖ (other + k)^(-input); not differentiable with respect to input, "
          "as in PyTorch")
