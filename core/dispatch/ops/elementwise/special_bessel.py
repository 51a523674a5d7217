"""Bessel functions of order 0 and 1 (J, Y, I, K, scaled I and K), the spherical j0 and Airy's Ai.

Each is computed where its method is accurate to float64 precision, in Ember ops:
- power series where few digits cancel (I for |x| < 20, K below 2, Airy for -7 <= x <= 3: 1e-12 there);
- asymptotic expansions beyond |x| = 20 (Hankel's), where their least term, about e^(-2|x|), is below the
  float64 epsilon, and for Airy below x = -7, where the best truncation gives 1e-13;
- in between, the trapezoidal rule on integral representations whose integrands are periodic or decay
  doubly exponentially, so that the rule converges exponentially: Bessel's integral
  Jₙ(x) = 1/π ∫₀^π cos(nθ - x sin θ) dθ (J, and Y through Neumann's series Y₀ = 2/π (log(x/2) + γ) J₀ -
  4/π Σ (-1)ᵏ J₂ₖ / k), and K_ν(x) = ∫₀^∞ exp(-x cosh t) cosh(νt) dt.
The values at infinities and at the edges of the domain are SciPy's, which PyTorch shares (J and I at ±inf
are NaN). Of these only i0, i0e, i1 and i1e are differentiable in PyTorch; the others, like PyTorch's,
return results without a gradient.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.meta import elementwise as broadcast_meta
from ...schema import Sample, defop
from ..namespace import F
from .special_support import EULER_GAMMA, floating, horner, ratio_series, scipy_special, select, without_gradient

_SERIES_BELOW = 20.0  # power series of I below, asymptotic series above
_I_TERMS = 45
_ASYMPTOTIC_TERMS = 30
_HANKEL_TERMS = 40  # P and Q together: their terms shrink up to k = 2x = 40 at x = 20


# -- modified Bessel functions of the first kind: I0, I1 and their scaled forms ---------------------------------

def _i_series(order: int, x):
    """Σₖ (x²/4)ᵏ / (k! (k+order)!), times (x/2)^order: I_order(x) for |x| < 20 (all terms positive).

    Nested by the ratios 1/(k (k+order)) of successive coefficients, which stay normal in float32, where the
    coefficients do not (see ``ratio_series``): on CUDA, flushed, they cost I₁(19.99) 2.4e-5 of its value."""
    y = F.mul(F.mul(x, x), 0.25)
    out = ratio_series(y, [1.0 / (k * (k + order)) for k in range(1, _I_TERMS)])
    return F.mul(out, F.mul(x, 0.5)) if order else out


def _hankel_sum(order: float, x, alternating: bool):
    """Σₖ aₖ / xᵏ with aₖ = Πⱼ (4ν² - (2j-1)²) / (k! 8ᵏ), each term's sign flipped if ``alternating``: the
    asymptotic series of e^(-x) √(2πx) I_ν(x) (alternating) and of eˣ √(2x/π) K_ν(x) (not)."""
    mu = 4.0 * order * order
    inverse = F.reciprocal(x)
    term, total = F.ones_like(x), F.ones_like(x)
    for k in range(1, _ASYMPTOTIC_TERMS + 1):
        factor = (mu - (2 * k - 1) ** 2) / (8.0 * k) * (-1.0 if alternating else 1.0)
        term = F.mul(term, F.mul(inverse, factor))
        total = F.add(total, term)
    return total


def _modified_i(order: int, scaled: bool):
    """I_order(x) (or e^(-|x|) I_order(x) if ``scaled``); I1 and its scaled form are odd."""
    def composite(x):
        ax = F.abs(x)
        large = F.ge(ax, _SERIES_BELOW)
        small_x = F.where(large, F.zeros_like(x), x)
        series = _i_series(order, small_x)
        if scaled:
            series = F.mul(series, F.exp(F.neg(F.abs(small_x))))
        big = F.where(large, ax, F.full_like(x, _SERIES_BELOW))
        log_prefactor = F.mul(F.log(F.mul(big, 2 * math.pi)), -0.5)  # 1/√(2πx), with eˣ folded in unless scaled
        asymptotic = F.mul(_hankel_sum(order, big, alternating=True),
                           F.exp(log_prefactor if scaled else F.add(log_prefactor, big)))
        if order:
            asymptotic = F.mul(asymptotic, F.sign(x))
        out = F.where(large, asymptotic, series)
        if not scaled:  # SciPy's (and PyTorch's) value
            at_infinity = F.full_like(x, math.nan)
        else:  # e^-|x| I(x) tends to 0, with the sign of x for the odd I1
            at_infinity = F.mul(F.sign(x), 0.0) if order else F.zeros_like(x)
        return F.where(F.isinf(x), at_infinity, out)
    return floating(composite)


# -- modified Bessel functions of the second kind: K0, K1 and their scaled forms --------------------------------

_K_SERIES_BELOW = 2.0
_K_STEP, _K_NODES = 0.15, 31  # the trapezoidal rule on [0, 4.5]


def _harmonic(n: int) -> float:
    return sum(1.0 / j for j in range(1, n + 1))


def _k_series(order: int, x):
    """K_order(x) for 0 < x <= 2 from the series of I and the harmonic numbers (no cancellation there)."""
    y = F.mul(F.mul(x, x), 0.25)
    log_term = F.add(F.log(F.mul(x, 0.5)), EULER_GAMMA)
    terms = 20
    if order == 0:
        i0 = horner(y, [1.0 / math.factorial(k) ** 2 for k in range(terms)])
        rest = horner(y, [_harmonic(k) / math.factorial(k) ** 2 for k in range(terms)])
        return F.add(F.neg(F.mul(log_term, i0)), rest)
    denominators = [math.factorial(k) * math.factorial(k + 1) for k in range(terms)]
    i1_sum = horner(y, [1.0 / d for d in denominators])
    rest = horner(y, [(_harmonic(k) + _harmonic(k + 1)) / d for k, d in enumerate(denominators)])
    half = F.mul(x, 0.5)
    return F.sub(F.add(F.reciprocal(x), F.mul(F.mul(log_term, half), i1_sum)), F.mul(F.mul(x, 0.25), rest))


def _k_trapezoid(order: float, x):
    """eˣ K_ν(x) = ∫₀^∞ exp(-x (cosh t - 1)) cosh(νt) dt by the trapezoidal rule, for 2 < x < 20."""
    t = F.mul(F.arange(_K_NODES, dtype=x.dtype, device=x.device), _K_STEP)
    cosh_minus_one = F.sub(F.mul(F.add(F.exp(t), F.exp(F.neg(t))), 0.5), 1.0)
    weight = F.mul(F.add(F.exp(F.mul(t, order)), F.exp(F.mul(t, -order))), 0.5 * _K_STEP)
    values = F.exp(F.mul(F.unsqueeze(F.neg(x), -1), cosh_minus_one))
    return F.sub(F.sum(F.mul(values, weight), -1), 0.5 * _K_STEP)  # the node t = 0 weighs h/2, not h


def _scaled_k(order: float, x):
    """eˣ K_ν(x) for x > 2: the trapezoidal rule below 20, Hankel's expansion above."""
    large = F.ge(x, _SERIES_BELOW)
    middle = F.where(large, F.full_like(x, _K_SERIES_BELOW), x)
    big = F.where(large, x, F.full_like(x, _SERIES_BELOW))
    asymptotic = F.mul(_hankel_sum(order, big, alternating=False), F.sqrt(F.div(math.pi / 2, big)))
    return F.where(large, asymptotic, _k_trapezoid(order, middle))


def _modified_k(order: int, scaled: bool):
    def composite(x):
        small = F.le(x, _K_SERIES_BELOW)
        safe = F.logical_and(F.gt(x, 0.0), F.isfinite(x))
        xs = F.where(F.logical_and(small, safe), x, F.ones_like(x))
        xl = F.where(F.logical_or(small, F.logical_not(safe)), F.full_like(x, 3.0), x)
        series = _k_series(order, xs)
        if scaled:
            series = F.mul(series, F.exp(xs))
        rest = _scaled_k(order, xl)
        if not scaled:
            rest = F.mul(rest, F.exp(F.neg(xl)))
        out = F.where(small, series, rest)
        return select((F.isnan(x), x), (F.lt(x, 0.0), F.full_like(x, math.nan)),
                      (F.eq(x, 0.0), F.full_like(x, math.inf)), (F.isinf(x), F.zeros_like(x)), out)
    return floating(composite)


# -- Bessel functions of the first and second kind: J0, J1, Y0, Y1 ----------------------------------------------

_J_NODES = 48  # the trapezoidal rule's intervals on [0, π]
_NEUMANN_TERMS = 24


def _j_table(x, orders: int):
    """J₀(x), ..., J_{orders-1}(x) along a new last dim, for |x| <= 20: the trapezoidal rule on Bessel's
    integral, one matrix product for all orders."""
    theta = F.mul(F.arange(_J_NODES + 1, dtype=x.dtype, device=x.device), math.pi / _J_NODES)
    weight = F.where(F.logical_or(F.eq(theta, 0.0), F.eq(theta, math.pi)), F.full_like(theta, 0.5),
                     F.ones_like(theta))
    phase = F.mul(F.unsqueeze(x, -1), F.sin(theta))  # x sin θ, shape (..., nodes)
    n_theta = F.mul(F.unsqueeze(theta, -1), F.arange(orders, dtype=x.dtype, device=x.device))  # (nodes, orders)
    # cos(nθ - x sin θ) = cos nθ cos(x sin θ) + sin nθ sin(x sin θ)
    cosines = F.matmul(F.mul(F.cos(phase), weight), F.cos(n_theta))
    sines = F.matmul(F.mul(F.sin(phase), weight), F.sin(n_theta))
    return F.div(F.add(cosines, sines), float(_J_NODES))


def _hankel_pq(order: int, x):
    """Hankel's P and Q series (with x >= 20): J = √(2/(πx)) (P cos χ - Q sin χ), Y = √(2/(πx)) (P sin χ +
    Q cos χ), χ = x - (order/2 + 1/4) π."""
    mu = 4.0 * order * order
    inverse = F.reciprocal(F.mul(x, 8.0))
    term, p, q = F.ones_like(x), F.ones_like(x), F.zeros_like(x)
    for k in range(1, _HANKEL_TERMS):
        term = F.mul(term, F.mul(inverse, (mu - (2 * k - 1) ** 2) / k))
        signed = term if (k // 2) % 2 == 0 else F.neg(term)
        if k % 2:
            q = F.add(q, signed)
        else:
            p = F.add(p, signed)
    return p, q


def _hankel(order: int, x, second_kind: bool):
    """J or Y of order 0 or 1 for x >= 20; cos χ and sin χ from cos x and sin x, which keep their precision."""
    p, q = _hankel_pq(order, x)
    c, s = F.cos(x), F.sin(x)
    root_half = math.sqrt(0.5)
    if order == 0:  # χ = x - π/4
        cos_chi, sin_chi = F.mul(F.add(c, s), root_half), F.mul(F.sub(s, c), root_half)
    else:  # χ = x - 3π/4
        cos_chi, sin_chi = F.mul(F.sub(s, c), root_half), F.mul(F.neg(F.add(s, c)), root_half)
    if second_kind:
        combined = F.add(F.mul(p, sin_chi), F.mul(q, cos_chi))
    else:
        combined = F.sub(F.mul(p, cos_chi), F.mul(q, sin_chi))
    return F.mul(combined, F.sqrt(F.div(2.0 / math.pi, x)))


def _bessel_j(order: int):
    def composite(x):
        ax = F.abs(x)
        large = F.ge(ax, _SERIES_BELOW)
        near = F.where(large, F.zeros_like(x), ax)
        table = _j_table(near, order + 1)
        small = F.select(table, -1, order)
        far = _hankel(order, F.where(large, ax, F.full_like(x, _SERIES_BELOW)), second_kind=False)
        out = F.where(large, far, small)
        if order:  # J1 is odd
            out = F.where(F.lt(x, 0.0), F.neg(out), out)
        return F.where(F.isinf(x), F.full_like(x, math.nan), out)
    return floating(composite)


def _neumann_y(order: int, x):
    """Y₀ or Y₁ for 0 < x <= 20 from Neumann's series in J₂ₖ (and its derivative for Y₁ = -Y₀')."""
    table = _j_table(x, 2 * _NEUMANN_TERMS + 2)
    log_term = F.add(F.log(F.mul(x, 0.5)), EULER_GAMMA)
    j0, j1 = F.select(table, -1, 0), F.select(table, -1, 1)
    if order == 0:  # Σ (-1)ᵏ J₂ₖ / k
        series = _alternating_sum(lambda k: F.select(table, -1, 2 * k))
        return F.sub(F.mul(F.mul(log_term, j0), 2 / math.pi), F.mul(series, 4 / math.pi))
    # Σ (-1)ᵏ (J₂ₖ₋₁ - J₂ₖ₊₁) / k
    series = _alternating_sum(lambda k: F.sub(F.select(table, -1, 2 * k - 1), F.select(table, -1, 2 * k + 1)))
    head = F.sub(F.div(j0, x), F.mul(log_term, j1))
    return F.add(F.mul(head, -2 / math.pi), F.mul(series, 2 / math.pi))


def _alternating_sum(term):
    """Σₖ (-1)ᵏ term(k) / k for k = 1 .. _NEUMANN_TERMS."""
    total = F.mul(term(1), -1.0)
    for k in range(2, _NEUMANN_TERMS + 1):
        total = F.add(total, F.mul(term(k), (-1.0) ** k / k))
    return total


def _bessel_y(order: int):
    def composite(x):
        positive = F.logical_and(F.gt(x, 0.0), F.isfinite(x))
        large = F.ge(x, _SERIES_BELOW)
        near = F.where(F.logical_and(positive, F.logical_not(large)), x, F.ones_like(x))
        far = _hankel(order, F.where(large, x, F.full_like(x, _SERIES_BELOW)), second_kind=True)
        out = F.where(large, far, _neumann_y(order, near))
        return select((F.isnan(x), x), (F.eq(x, 0.0), F.full_like(x, -math.inf)),
                      (F.lt(x, 0.0), F.full_like(x, math.nan)), (F.isinf(x), F.full_like(x, math.nan)), out)
    return floating(composite)


# -- the spherical Bessel function j0 and Airy's Ai -------------------------------------------------------------

def _spherical_j0(x):
    finite = F.where(F.isinf(x), F.ones_like(x), x)
    out = F.where(F.eq(x, 0.0), F.ones_like(x), F.div(F.sin(finite), finite))
    return F.where(F.isinf(x), F.zeros_like(x), out)


_AI_0, _AI_PRIME_0 = 0.3550280538878172, -0.2588194037928068  # Ai(0), Ai'(0)
_AIRY_SERIES_ABOVE = 3.0  # the Maclaurin series below this, K_{1/3} above
_AIRY_TERMS = 40
#: working itemsize -> (where the series gives way to the asymptotic form for negative x, terms per sum of
#: that form). The series' terms cancel more the further out, so the switch comes sooner in float32; the
#: asymptotic form diverges, and these term counts are its best truncations there.
_AIRY_NEGATIVE = {8: (-7.0, 12), 4: (-4.0, 6)}


def _airy_series(x):
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = Σ 3ᵏ (1/3)ₖ x³ᵏ / (3k)!, g = Σ 3ᵏ (2/3)ₖ x³ᵏ⁺¹ / (3k+1)!."""
    cube = F.mul(F.mul(x, x), x)
    f_term, g_term = F.ones_like(x), x
    f, g = f_term, g_term
    for k in range(1, _AIRY_TERMS):
        f_term = F.mul(f_term, F.div(cube, float((3 * k - 1) * 3 * k)))
        g_term = F.mul(g_term, F.div(cube, float(3 * k * (3 * k + 1))))
        f, g = F.add(f, f_term), F.add(g, g_term)
    return F.add(F.mul(f, _AI_0), F.mul(g, _AI_PRIME_0))


def _airy_positive(x):
    """Ai(x) = √(x/3)/π K_{1/3}(ζ), ζ = 2/3 x^(3/2), for x > 3 (ζ > 3.46)."""
    zeta = F.mul(F.mul(x, F.sqrt(x)), 2.0 / 3.0)
    scaled = _scaled_k(1.0 / 3.0, zeta)
    return F.mul(F.mul(scaled, F.exp(F.neg(zeta))), F.div(F.sqrt(F.div(x, 3.0)), math.pi))


def _airy_negative(x, terms: int):
    """Ai(-z) ~ z^(-1/4)/√π [sin(ζ + π/4) Σ (-1)ᵏ u₂ₖ/ζ²ᵏ - cos(ζ + π/4) Σ (-1)ᵏ u₂ₖ₊₁/ζ²ᵏ⁺¹] for z > 7
    (z > 4 in float32),
    uₖ = Γ(3k + 1/2) / (54ᵏ k! Γ(k + 1/2))."""
    z = F.neg(x)
    zeta = F.mul(F.mul(z, F.sqrt(z)), 2.0 / 3.0)
    inverse = F.reciprocal(zeta)
    u = [1.0]
    for k in range(1, 2 * terms):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216.0 * k * (2 * k - 1)))
    square = F.mul(inverse, inverse)
    even = horner(square, [u[2 * k] * (-1.0) ** k for k in range(terms)])
    odd = F.mul(horner(square, [u[2 * k + 1] * (-1.0) ** k for k in range(terms)]), inverse)
    angle = F.add(zeta, math.pi / 4)
    combined = F.sub(F.mul(F.sin(angle), even), F.mul(F.cos(angle), odd))
    return F.div(combined, F.mul(F.sqrt(F.sqrt(z)), math.sqrt(math.pi)))


def _airy_ai(x):
    low, terms = _AIRY_NEGATIVE[x.dtype.itemsize]
    high = _AIRY_SERIES_ABOVE
    below, above = F.lt(x, low), F.gt(x, high)
    finite = F.isfinite(x)
    inside = F.where(F.logical_or(below, above), F.zeros_like(x), x)
    left = F.where(F.logical_and(below, finite), x, F.full_like(x, 2 * low))
    right = F.where(F.logical_and(above, finite), x, F.full_like(x, 2 * high))
    out = select((below, _airy_negative(left, terms)), (above, _airy_positive(right)), _airy_series(inside))
    return F.where(F.isinf(x), F.full_like(x, math.nan), out)


# -- declarations ------------------------------------------------------------------------------------------------

def _reference(function):
    def reference(x):
        return function(x.astype(np.result_type(x, 0.5)))
    return reference


def _values_samples(values):
    def samples(make, dtype):
        if dtype.is_floating_point:
            yield Sample((make.tensor(np.array(values), dtype),), note="each method's range and their borders",
                         gradcheck=False)
    return samples


_WIDE = [-60.0, -25.0, -19.99, -7.0, -0.3, 0.0, 1e-4, 0.8, 2.0, 2.01, 9.5, 19.99, 20.0, 45.0, 300.0]
_POSITIVE = [1e-6, 1e-3, 0.3, 1.99, 2.0, 2.01, 5.0, 12.5, 19.99, 20.0, 35.0, 120.0, 600.0]
_FIELDS = dict(promotion=rules.to_float, kind="composite", method=False,
               tolerances={"float32": (2e-5, 2e-5), "float64": (1e-11, 1e-12)})


def _non_differentiable(name: str, composite, reference, values, doc: str, **fields):
    return defop(f"{name}(Tensor input)", "elementwise", meta=broadcast_meta(name),
                 composite=without_gradient(composite),
                 reference=_reference(reference), samples=_values_samples(values), differentiable=False,
                 doc=doc, **{**_FIELDS, **fields})


def _scaled_i_derivative(order: int):
    """d/dx e^(-|x|) I₀ = e^(-|x|) (I₁ - sign(x) I₀); d/dx e^(-|x|) I₁ = e^(-|x|) (I₀ - I₁/x) - sign(x) e^(-|x|) I₁,
    with the limit 1/2 of d/dx I₁ at 0."""
    def derivative(grad, input, result):
        if order == 0:
            return F.mul(grad, F.sub(F.special_i1e(input), F.mul(F.sign(input), result)))
        slope = F.sub(F.sub(F.special_i0e(input), F.div(result, input)), F.mul(F.sign(input), result))
        return F.mul(grad, F.where(F.eq(input, 0.0), F.full_like(result, 0.5), slope))
    return derivative


def _i1_derivative(grad, input, result):
    """I₁' = I₀ - I₁/x, and 1/2 at 0."""
    slope = F.sub(F.i0(input), F.div(result, input))
    return F.mul(grad, F.where(F.eq(input, 0.0), F.full_like(result, 0.5), slope))


_I_FIELDS = dict(promotion=rules.to_float, kind="composite", samples=_values_samples(_WIDE),
                 tolerances={"float32": (2e-5, 2e-5), "float64": (1e-11, 1e-12)})
defop("i0(Tensor input)", "elementwise", meta=broadcast_meta("i0"), composite=_modified_i(0, scaled=False),
      reference=_reference(np.i0), inplace=True, derivative=lambda grad, input: F.mul(grad, F.special_i1(input)),
      doc="the modified Bessel function of the first kind of order 0", **_I_FIELDS)
defop("special_i0e(Tensor input)", "elementwise", meta=broadcast_meta("special_i0e"), method=False,
      composite=_modified_i(0, scaled=True), reference=_reference(lambda x: scipy_special().i0e(x)),
      derivative=_scaled_i_derivative(0), doc="exp(-|x|) i0(x), which does not overflow", **_I_FIELDS)
defop("special_i1(Tensor input)", "elementwise", meta=broadcast_meta("special_i1"), method=False,
      composite=_modified_i(1, scaled=False), reference=_reference(lambda x: scipy_special().i1(x)),
      derivative=_i1_derivative, doc="the modified Bessel function of the first kind of order 1", **_I_FIELDS)
defop("special_i1e(Tensor input)", "elementwise", meta=broadcast_meta("special_i1e"), method=False,
      composite=_modified_i(1, scaled=True), reference=_reference(lambda x: scipy_special().i1e(x)),
      derivative=_scaled_i_derivative(1), doc="exp(-|x|) i1(x), which does not overflow", **_I_FIELDS)

_non_differentiable("special_modified_bessel_i0", _modified_i(0, scaled=False), lambda x: scipy_special().i0(x),
                    _WIDE, "the modified Bessel function I₀ (without a gradient, as in PyTorch; i0 has one)")
_non_differentiable("special_modified_bessel_i1", _modified_i(1, scaled=False), lambda x: scipy_special().i1(x),
                    _WIDE, "the modified Bessel function I₁ (without a gradient, as in PyTorch; special.i1 has one)")
_non_differentiable("special_modified_bessel_k0", _modified_k(0, scaled=False), lambda x: scipy_special().k0(x),
                    _POSITIVE, "the modified Bessel function of the second kind K₀; NaN below 0")
_non_differentiable("special_modified_bessel_k1", _modified_k(1, scaled=False), lambda x: scipy_special().k1(x),
                    _POSITIVE, "the modified Bessel function of the second kind K₁; NaN below 0")
_non_differentiable("special_scaled_modified_bessel_k0", _modified_k(0, scaled=True),
                    lambda x: scipy_special().k0e(x), _POSITIVE, "exp(x) K₀(x), which does not underflow")
_non_differentiable("special_scaled_modified_bessel_k1", _modified_k(1, scaled=True),
                    lambda x: scipy_special().k1e(x), _POSITIVE, "exp(x) K₁(x), which does not underflow")
_non_differentiable("special_bessel_j0", _bessel_j(0), lambda x: scipy_special().j0(x), _WIDE,
                    "the Bessel function of the first kind of order 0")
_non_differentiable("special_bessel_j1", _bessel_j(1), lambda x: scipy_special().j1(x), _WIDE,
                    "the Bessel function of the first kind of order 1")
_non_differentiable("special_bessel_y0", _bessel_y(0), lambda x: scipy_special().y0(x), _POSITIVE,
                    "the Bessel function of the second kind of order 0; NaN below 0")
_non_differentiable("special_bessel_y1", _bessel_y(1), lambda x: scipy_special().y1(x), _POSITIVE,
                    "the Bessel function of the second kind of order 1; NaN below 0")
_non_differentiable("special_spherical_bessel_j0", floating(_spherical_j0),
                    lambda x: scipy_special().spherical_jn(0, x), _WIDE, "sin(x) / x, and 1 at 0")
_non_differentiable("special_airy_ai", floating(_airy_ai), lambda x: scipy_special().airy(x)[0],
                    [-40.0, -12.0, -7.01, -7.0, -3.0, -0.5, 0.0, 1.0, 2.99, 3.0, 3.01, 6.0, 9.0, 20.0, 100.0],
                    "Airy's function Ai(x)", tolerances={"float32": (1e-4, 2e-5), "float64": (1e-10, 1e-11)})
