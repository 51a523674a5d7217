"""The classical orthogonal polynomials of torch.special: Chebyshev (T, U, V, W and their shifted forms on
[0, 1]), Hermite (H and He), Laguerre and Legendre, of degree ``n`` given per element.

Each is its three-term recurrence, run once up to the largest degree in the call (one read of that value)
with every element picking its own degree on the way (up to degree 100 000). As in PyTorch, a degree is truncated to an integer,
a negative degree gives 0, and the polynomials have no gradient. A non-finite degree gives NaN.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...schema import rules
from ...schema.errors import EmberError
from ...schema.meta import elementwise as broadcast_meta
from ...schema import Sample, defop
from ..namespace import F
from .special_support import as_tensors, floating, scipy_special, without_gradient


#: The highest degree computed: the recurrence takes a few ops per degree (PyTorch's loops per element too)
MAX_DEGREE = 100_000


def _recurrence(name: str, first: Callable, second: Callable, step: Callable, shifted: bool = False):
    """A composite from P₀(x), P₁(x) and P_{k+1} = step(k, x, P_{k-1}, P_k); ``shifted`` evaluates at 2x - 1."""
    def composite(x, n):
        x, n = as_tensors(x, n)
        if shifted:
            x = F.sub(F.mul(x, 2.0), 1.0)
        zero = F.zeros_like(F.add(x, n))
        x, degree = F.add(x, zero), F.add(F.floor(n), zero)
        finite = F.isfinite(degree)
        degree = F.where(finite, degree, F.full_like(degree, -1.0))
        highest = int(F.amax(degree).item()) if degree.numel() else 0
        if highest > MAX_DEGREE:
            raise EmberError(f"{name}: degrees above {MAX_DEGREE} are not supported (the recurrence runs once per "
                             f"degree), got n = {highest} (input of shape {tuple(x.shape)})")
        previous, current = first(x), second(x)
        out = F.where(F.eq(degree, 0.0), previous, F.where(F.eq(degree, 1.0), current, zero))
        for k in range(1, highest):
            previous, current = current, step(k, x, previous, current)
            out = F.where(F.eq(degree, float(k + 1)), current, out)
        return F.where(finite, out, F.full_like(out, math.nan))
    return floating(composite)


def _two_x_recurrence(k, x, previous, current):
    """2x Pₖ - Pₖ₋₁: Chebyshev T, U, V and W share it."""
    return F.sub(F.mul(F.mul(x, current), 2.0), previous)


def _ONE(x):
    return F.ones_like(x)


_CHEBYSHEV_FIRST = {"t": lambda x: x, "u": lambda x: F.mul(x, 2.0), "v": lambda x: F.sub(F.mul(x, 2.0), 1.0),
                    "w": lambda x: F.add(F.mul(x, 2.0), 1.0)}


def _hermite_step(k, x, previous, current):
    return F.sub(F.mul(F.mul(x, current), 2.0), F.mul(previous, 2.0 * k))


def _hermite_e_step(k, x, previous, current):
    return F.sub(F.mul(x, current), F.mul(previous, float(k)))


def _laguerre_step(k, x, previous, current):
    return F.div(F.sub(F.mul(F.sub(2.0 * k + 1.0, x), current), F.mul(previous, float(k))), k + 1.0)


def _legendre_step(k, x, previous, current):
    return F.div(F.sub(F.mul(F.mul(x, current), 2.0 * k + 1.0), F.mul(previous, float(k))), k + 1.0)


# -- references: SciPy's evaluations at the truncated degree, 0 below degree 0 --------------------------------

def _chebyshev_v(n, x):
    s = scipy_special()
    return s.eval_chebyu(n, x) - np.where(n > 0, s.eval_chebyu(np.maximum(n - 1, 0), x), 0.0)


def _chebyshev_w(n, x):
    s = scipy_special()
    return s.eval_chebyu(n, x) + np.where(n > 0, s.eval_chebyu(np.maximum(n - 1, 0), x), 0.0)


def _reference(evaluate, shifted: bool = False):
    def reference(x, n):
        dt = np.result_type(x, n, 0.5)
        x, n = np.broadcast_arrays(np.asarray(x, dt), np.asarray(n, dt))
        finite = np.isfinite(n)
        degree = np.where(finite, np.trunc(n), -1).astype(np.int64)
        at = 2 * x - 1 if shifted else x
        with np.errstate(all="ignore"):
            out = np.where(degree < 0, 0.0, evaluate(np.maximum(degree, 0), at))
        return np.where(finite, out, np.nan).astype(dt)
    return reference


def _samples(make, dtype):
    yield Sample((make((2, 3), low=-1.5, high=1.5), make((2, 3), low=0, high=9)), note="degrees 0 to 8")
    yield Sample((make((4,), low=-1.0, high=1.0), 12), note="Python int degree 12")
    if dtype.is_floating_point:
        x = make.tensor(np.array([-1.0, 1.0, 0.3, 2.0, -0.7, 0.5]), dtype)
        n = make.tensor(np.array([5.0, 4.0, -2.0, 3.7, 0.0, math.nan]), dtype)
        yield Sample((x, n), note="±1, a negative, a fractional and a NaN degree")


def _polynomial(name: str, first, second, step, evaluate, doc: str, shifted: bool = False):
    return defop(f"{name}(Tensor input, Tensor n)", "elementwise", promotion=rules.to_float, kind="composite",
                 meta=broadcast_meta(name), method=False,
                 composite=without_gradient(_recurrence(name, first, second, step, shifted)),
                 reference=_reference(evaluate, shifted), samples=_samples, differentiable=False, doc=doc,
                 domain={"input": {"low": -1.2, "high": 1.2}, "n": {"low": 0, "high": 8}},
                 tolerances={"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10)})


_T, _U, _V, _W = (_CHEBYSHEV_FIRST[k] for k in "tuvw")
_s = scipy_special
_polynomial("special_chebyshev_polynomial_t", _ONE, _T, _two_x_recurrence, lambda n, x: _s().eval_chebyt(n, x),
            "the Chebyshev polynomial of the first kind Tₙ(x)")
_polynomial("special_chebyshev_polynomial_u", _ONE, _U, _two_x_recurrence, lambda n, x: _s().eval_chebyu(n, x),
            "the Chebyshev polynomial of the second kind Uₙ(x)")
_polynomial("special_chebyshev_polynomial_v", _ONE, _V, _two_x_recurrence, _chebyshev_v,
            "the Chebyshev polynomial of the third kind Vₙ(x)")
_polynomial("special_chebyshev_polynomial_w", _ONE, _W, _two_x_recurrence, _chebyshev_w,
            "the Chebyshev polynomial of the fourth kind Wₙ(x)")
_polynomial("special_shifted_chebyshev_polynomial_t", _ONE, _T, _two_x_recurrence,
            lambda n, x: _s().eval_chebyt(n, x), "Tₙ(2x - 1), orthogonal on [0, 1]", shifted=True)
_polynomial("special_shifted_chebyshev_polynomial_u", _ONE, _U, _two_x_recurrence,
            lambda n, x: _s().eval_chebyu(n, x), "Uₙ(2x - 1), orthogonal on [0, 1]", shifted=True)
_polynomial("special_shifted_chebyshev_polynomial_v", _ONE, _V, _two_x_recurrence, _chebyshev_v,
            "Vₙ(2x - 1), orthogonal on [0, 1]", shifted=True)
_polynomial("special_shifted_chebyshev_polynomial_w", _ONE, _W, _two_x_recurrence, _chebyshev_w,
            "Wₙ(2x - 1), orthogonal on [0, 1]", shifted=True)
_polynomial("special_hermite_polynomial_h", _ONE, lambda x: F.mul(x, 2.0), _hermite_step,
            lambda n, x: _s().eval_hermite(n, x), "the physicists' Hermite polynomial Hₙ(x)")
_polynomial("special_hermite_polynomial_he", _ONE, lambda x: x, _hermite_e_step,
            lambda n, x: _s().eval_hermitenorm(n, x), "the probabilists' Hermite polynomial Heₙ(x)")
_polynomial("special_laguerre_polynomial_l", _ONE, lambda x: F.sub(1.0, x), _laguerre_step,
            lambda n, x: _s().eval_laguerre(n, x), "the Laguerre polynomial Lₙ(x)")
_polynomial("special_legendre_polynomial_p", _ONE, lambda x: x, _legendre_step,
            lambda n, x: _s().eval_legendre(n, x), "the Legendre polynomial Pₙ(x)")
