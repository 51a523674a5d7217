"""Special functions: lgamma, digamma and polygamma, composed from elementwise ops so they run on every backend.

One routine serves all three. For x >= 1/2 the argument is shifted up by the recurrences
Γ(x+1) = xΓ(x) and ψ⁽ⁿ⁾(x+1) = ψ⁽ⁿ⁾(x) + (-1)ⁿ n!/xⁿ⁺¹ until it is large enough for the Stirling
(asymptotic Bernoulli) series to be accurate to double precision. For x < 1/2 the reflection formulas
Γ(x)Γ(1-x) = π/sin(πx) and ψ(1-x) - ψ(x) = π cot(πx) (differentiated n times for polygamma) map the
argument onto 1 - x > 1/2. The references are SciPy's, with PyTorch's conventions at -inf.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ...schema import rules
from ...schema.meta import elementwise as broadcast_meta
from ...schema import FLOAT32_ON_CUDA, Sample, defop
from ..namespace import F
from .special_erf import lower_ndtri
from .special_support import floating, horner
from ...schema.errors import ArgumentError

#: Arguments are shifted up to at least this before the asymptotic series is used; with the terms
#: below the series' error there is about 1e-16 relative (and 2e-14 for polygamma of order up to 8).
_SHIFT = 12
#: Bernoulli numbers B2, B4, ..., B20 of the asymptotic series.
BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
              Fraction(-174611, 330))


def _shifted(z):
    """(y, mask): y = z + _SHIFT where z is below _SHIFT (mask true), else z itself."""
    mask = F.lt(z, _SHIFT)
    return F.where(mask, F.add(z, _SHIFT), z), mask


def _lgamma_large(z):
    """log Γ(z) for z >= 1/2: shift, then Stirling's series."""
    y, mask = _shifted(z)
    product = F.where(mask, z, F.ones_like(z))
    for k in range(1, _SHIFT):
        product = F.mul(product, F.where(mask, F.add(z, k), F.ones_like(z)))
    inv = F.reciprocal(y)
    inv2 = F.mul(inv, inv)
    series = horner(inv2, [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(BERNOULLI[:6], 1)])
    # (y - 1/2)(log y - 1) - 1/2 is (y - 1/2) log y - y without inf - inf at y = inf
    stirling = F.add(F.mul(F.sub(y, 0.5), F.sub(F.log(y), 1.0)), 0.5 * math.log(2 * math.pi) - 0.5)
    return F.sub(F.add(stirling, F.mul(series, inv)), F.log(product))


def _polygamma_large(n: int, z):
    """ψ⁽ⁿ⁾(z) for z >= 1/2: shift, then the asymptotic series."""
    y, mask = _shifted(z)
    zero = F.zeros_like(z)
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    shift_sum = zero
    for k in range(_SHIFT):
        term = F.reciprocal(F.add(z, k)) if n == 0 else F.pow(F.add(z, k), -(n + 1))
        shift_sum = F.add(shift_sum, F.where(mask, term, zero))
    inv = F.reciprocal(y)
    inv2 = F.mul(inv, inv)
    if n == 0:
        coefficients = [float(b / (2 * k)) for k, b in enumerate(BERNOULLI[:6], 1)]
        series = F.mul(horner(inv2, coefficients), inv2)
        asymptotic = F.sub(F.sub(F.log(y), F.mul(inv, 0.5)), series)
        return F.sub(asymptotic, shift_sum)
    # (-1)^(n+1) [(n-1)!/yⁿ + n!/(2yⁿ⁺¹) + Σ B₂ₖ (2k+n-1)!/(2k)! / y²ᵏ⁺ⁿ]
    coefficients = [math.factorial(n - 1), math.factorial(n) / 2 * 1.0] + [
        float(b * Fraction(math.factorial(2 * k + n - 1), math.factorial(2 * k)))
        for k, b in enumerate(BERNOULLI, 1)]
    head = F.add(coefficients[0], F.mul(inv, coefficients[1]))
    tail = F.mul(horner(inv2, coefficients[2:]), inv2)
    asymptotic = F.mul(F.add(head, tail), F.pow(inv, n))
    return F.mul(F.add(asymptotic, F.mul(shift_sum, math.factorial(n))), sign)


def _cot_derivative_polynomial(n: int) -> list:
    """Coefficients (lowest first) of p with dⁿ/dxⁿ cot(πx) = p(cot(πx)), from d/dx cot = -π(1 + cot²)."""
    p = [0.0, 1.0]
    for _ in range(n):
        derivative = [k * c for k, c in enumerate(p)][1:] or [0.0]
        # -π (1 + c²) p'(c)
        grown = [0.0] * (len(derivative) + 2)
        for k, c in enumerate(derivative):
            grown[k] -= math.pi * c
            grown[k + 2] -= math.pi * c
        p = grown
    return p


def _reflection_parts(x):
    """(reflect, z, frac, pole): where x < 1/2, z = 1 - x; frac = x - round(x) in [-1/2, 1/2], exact, so
    sin(π frac) and cot(π frac) keep full precision next to the poles at the integers <= 0."""
    reflect = F.lt(x, 0.5)
    z = F.where(reflect, F.sub(1.0, x), x)
    nearest = F.round(x)
    pole = F.logical_and(F.le(x, 0.0), F.eq(x, nearest))  # -inf counts as a pole, as round(-inf) == -inf
    frac = F.where(pole, F.zeros_like(x), F.sub(x, nearest))
    return reflect, z, frac, pole


def _lgamma(x):
    reflect, z, frac, pole = _reflection_parts(x)
    large = _lgamma_large(z)
    # log Γ(x) = log(π / |sin πx|) - log Γ(1 - x); |sin πx| = |sin(π frac)|
    reflected = F.sub(F.sub(math.log(math.pi), F.log(F.abs(F.sin(F.mul(frac, math.pi))))), large)
    out = F.where(reflect, reflected, large)
    return F.where(pole, F.full_like(x, math.inf), out)


def _polygamma(n: int, x):
    reflect, z, frac, pole = _reflection_parts(x)
    large = _polygamma_large(n, z)
    cot = F.reciprocal(F.tan(F.mul(frac, math.pi)))
    # ψ⁽ⁿ⁾(x) = (-1)ⁿ ψ⁽ⁿ⁾(1-x) - π dⁿ/dxⁿ cot(πx)
    cot_term = F.mul(horner(cot, _cot_derivative_polynomial(n)), math.pi)
    reflected = F.sub(large if n % 2 == 0 else F.neg(large), cot_term)
    out = F.where(reflect, reflected, large)
    if n == 0:  # ψ(±0) = ∓inf, ψ at negative integers and -inf is NaN
        at_pole = F.where(F.eq(x, 0.0), F.div(-1.0, x), F.full_like(x, math.nan))
    else:  # odd orders go to +inf at the poles, even orders to -inf
        at_pole = F.full_like(x, math.inf if n % 2 else -math.inf)
    out = F.where(pole, at_pole, out)
    if n >= 1:  # the recurrence gives inf - inf at +inf; every polygamma of order >= 1 tends to 0 there
        out = F.where(F.eq(x, math.inf), F.zeros_like(x), out)
    return out


# -- references (SciPy), with PyTorch's value at -inf -----------------------------------------------------

def _lgamma_reference(x):
    from scipy import special
    out = special.gammaln(x)
    return np.where(np.isneginf(x), np.inf, out).astype(out.dtype)


def _digamma_reference(x):
    from scipy import special
    return special.psi(x)


def _polygamma_reference(n, x):
    from scipy import special
    out = np.asarray(special.psi(x) if n == 0 else special.polygamma(n, x))
    if n >= 1:
        out = np.where(np.isneginf(x), np.inf if n % 2 else -np.inf, out)
    return out


# -- samples: the generated ones cover shapes and special values; these add poles and large arguments --

_DOMAIN = {"input": {"low": -6.0, "high": 12.0}}
_NEAR_POLES = [-4.5, -3.25, -2.999, -1.75, -1.0, -0.5, -1e-3, 1e-3, 0.25, 1.0, 2.0, 3.5, 7.0, 40.0, 1e3]


def _pole_samples(make, dtype):
    yield Sample((make.tensor(np.array(_NEAR_POLES), dtype),), note="near and at poles, large arguments")


def _polygamma_samples(make, dtype):
    values = make.tensor(np.array(_NEAR_POLES), dtype)
    for n in (0, 1, 2, 3):
        yield Sample((n, make((2, 3), **_DOMAIN["input"])), note=f"n={n}")
        yield Sample((n, values), note=f"n={n}, near poles")
    if dtype.is_floating_point:
        yield Sample((1, make.specials()), note="special values")
        yield Sample((2, make((3, 4), low=0.1, high=30.0, noncontiguous=True)), note="non-contiguous")
    yield Sample((1, make((0, 2))), note="empty")
    yield Sample((4, make(())), note="0-d, n=4")


#: The highest order computed: n! overflows float64 beyond it, and the reflection polynomial has n + 1 terms.
MAX_POLYGAMMA_ORDER = 170


def _polygamma_check(op, args):
    n = args["n"]
    if n < 0:
        raise ArgumentError(f"polygamma: the order n must be non-negative, got {n}")
    if n > MAX_POLYGAMMA_ORDER:  # PyTorch returns inf/nan there; refuse instead of hanging or guessing
        raise ArgumentError(f"polygamma: orders above {MAX_POLYGAMMA_ORDER} are not supported (n! overflows float64), "
                            f"got n={n}")


#: float32 rounds the shifted sums and the reflection; half precision computes in float32
_TOLERANCES = {"float32": (2e-5, 2e-5), "float64": (1e-9, 1e-10)}
_FIELDS = dict(promotion=rules.to_float, grad_domain={"input": {"low": 0.3, "high": 6.0}}, domain=_DOMAIN,
               tolerances=_TOLERANCES)

defop("lgamma(Tensor input)", "elementwise", kind="composite", meta=broadcast_meta("lgamma"),
      composite=floating(_lgamma), reference=_lgamma_reference, samples=_pole_samples, inplace=True,
      derivative=lambda grad, input: F.mul(grad, F.digamma(input)),
      doc="log |Γ(input)|; +inf at the poles (0, negative integers) and at ±inf", **_FIELDS)
defop("digamma(Tensor input)", "elementwise", kind="composite", meta=broadcast_meta("digamma"),
      composite=floating(lambda x: _polygamma(0, x)), reference=_digamma_reference, samples=_pole_samples,
      inplace=True, derivative=lambda grad, input: F.mul(grad, F.polygamma(1, input)),
      doc="ψ(input) = d/dx log Γ(x); -inf at +0, +inf at -0, NaN at negative integers", **_FIELDS)
defop("polygamma(int n, Tensor input)", "elementwise", kind="composite", meta=lambda n, x: broadcast_meta(
      "polygamma")(x), composite=floating(_polygamma), reference=_polygamma_reference,
      samples=_polygamma_samples, normalize=_polygamma_check, method=False,
      derivative=lambda grad, n, input: F.mul(grad, F.polygamma(n + 1, input)),
      doc="the n-th derivative of digamma (n=0: digamma itself)", **_FIELDS)


# -- erfinv --------------------------------------------------------------------------------------------------
# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): two polynomials in
# w = -log(1 - y²), good to float32 precision over the whole range, tails included.
_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257)
_NEWTON_STEPS = 2  # float64: each Newton step on erf(x) = y doubles the ~7 correct digits
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2


def _erfinv(y):
    inside = F.lt(F.abs(y), 1.0)
    safe = F.where(inside, y, F.zeros_like(y))  # keep the arithmetic finite; the edges are set below
    w = F.neg(F.log1p(F.neg(F.mul(safe, safe))))
    central = horner(F.sub(w, 2.5), _GILES_CENTRAL)
    tail = horner(F.sub(F.sqrt(w), 3.0), _GILES_TAIL)
    x = F.mul(F.where(F.lt(w, 5.0), central, tail), safe)
    if y.dtype.itemsize == 8:  # below float64, erf's rounding near ±1 would undo the polynomial's accuracy
        for _ in range(_NEWTON_STEPS):
            slope = F.div(F.exp(F.neg(F.mul(x, x))), _SQRT_PI_OVER_2)
            x = F.sub(x, F.div(F.sub(F.erf(x), safe), slope))
        # from |y| = 1/2 on, erf(x) rounds towards ±1 and the polynomial (made for float32's range) strays:
        # there erfinv(y) = -ndtri((1 - |y|)/2) / √2 with the sign of y, where 1 - |y| is exact
        magnitude = F.abs(safe)
        half_tail = F.mul(F.sub(1.0, F.where(F.lt(magnitude, 0.5), F.full_like(y, 0.5), magnitude)), 0.5)
        tail = F.div(F.mul(lower_ndtri(half_tail, F.log(half_tail)), F.sign(safe)), -math.sqrt(2.0))
        x = F.where(F.lt(magnitude, 0.5), x, tail)
    edge = F.where(F.eq(F.abs(y), 1.0), F.mul(y, math.inf), F.full_like(y, math.nan))  # ±1 -> ±inf, else NaN
    return F.where(inside, x, edge)


def _erfinv_reference(y):
    from scipy import special
    return special.erfinv(y)


def _erfinv_samples(make, dtype):
    edges = [-1.0, -0.999999, -0.9, -0.3, -1e-5, 0.0, 1e-5, 0.5, 0.99, 0.999999, 1 - 2e-12, 1.0, 1.5]
    yield Sample((make.tensor(np.array(edges), dtype),), note="edges, tails, outside [-1, 1]")


defop("erfinv(Tensor input)", "elementwise", kind="composite", meta=broadcast_meta("erfinv"),
      composite=floating(_erfinv), reference=_erfinv_reference, samples=_erfinv_samples, inplace=True,
      autocast=FLOAT32_ON_CUDA,
      promotion=rules.to_float, domain={"input": {"low": -0.99, "high": 0.99}},
      grad_domain={"input": {"low": -0.9, "high": 0.9}}, tolerances={"float64": (1e-9, 1e-9)},
      derivative=lambda grad, result: F.mul(grad, F.mul(F.exp(F.mul(result, result)), _SQRT_PI_OVER_2)),
      doc="the inverse of erf on (-1, 1); ±inf at ±1, NaN outside")
