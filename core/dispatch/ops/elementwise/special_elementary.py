"""Special functions with closed forms: exp2, sinc, entr, logit, xlogy, xlog1py and the multivariate log-gamma.

All are composites of elementwise ops; what each adds over the plain formula is its value at the edges
(0 log 0 = 0, sinc(0) = 1, NaN propagation) and PyTorch's derivative. The references are SciPy's or NumPy's,
with PyTorch's conventions where they differ (xlogy(0, NaN) is NaN).
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...schema.errors import ArgumentError
from ...schema.meta import elementwise as broadcast_meta
from ...schema import Sample, defop
from ..namespace import F
from .complex_support import conj
from .special_support import floating, is_tensor, scipy_special

_LN2 = math.log(2.0)
_LOG_PI = math.log(math.pi)


def _float_fields(name: str) -> dict:
    return dict(promotion=rules.to_float, meta=broadcast_meta(name), kind="composite")


# -- exp2 ------------------------------------------------------------------------------------------------------

def _exp2(x):
    """2 ** x; complex x as exp(x ln 2) with each part scaled apart, as PyTorch (a complex product would make
    2 ** (inf + 0j) inf + NaN j)."""
    if x.dtype.kind != "complex":
        return F.pow(2.0, x)
    return F.exp(F.complex(F.mul(F.real(x), _LN2), F.mul(F.imag(x), _LN2)))


defop("exp2(Tensor input)", "elementwise", **_float_fields("exp2"), inplace=True, dtypes="all+complex",
      composite=floating(_exp2), reference=lambda x: np.exp2(x.astype(np.result_type(x, 0.5))),
      derivative=lambda grad, result: F.mul(grad, conj(F.mul(result, _LN2))),
      doc="2 ** input, elementwise")


# -- sinc ------------------------------------------------------------------------------------------------------

def _sinc(x):
    pi_x = F.mul(x, math.pi)
    return F.where(F.eq(x, 0.0), F.ones_like(x), F.div(F.sin(pi_x), pi_x))


def _sinc_derivative(grad, input):
    """(πx cos πx - sin πx) / (πx²), and 0 at x = 0 where sinc is flat."""
    pi_x = F.mul(input, math.pi)
    slope = F.div(F.sub(F.mul(pi_x, F.cos(pi_x)), F.sin(pi_x)), F.mul(pi_x, input))
    return F.mul(grad, conj(F.where(F.eq(input, 0.0), F.zeros_like(slope), slope)))


defop("sinc(Tensor input)", "elementwise", **_float_fields("sinc"), inplace=True, composite=floating(_sinc),
      dtypes="all+complex",
      reference=lambda x: np.sinc(x.astype(np.result_type(x, 0.5))), derivative=_sinc_derivative,
      tolerances={"float32": (1e-5, 2e-5)},
      doc="the normalized sinc, sin(πx) / (πx), and 1 at 0")


# -- entr ------------------------------------------------------------------------------------------------------

def _entr(x):
    positive = F.mul(F.neg(x), F.log(F.where(F.gt(x, 0.0), x, F.ones_like(x))))
    out = F.where(F.gt(x, 0.0), positive, F.where(F.eq(x, 0.0), F.zeros_like(x), F.full_like(x, -math.inf)))
    return F.where(F.isnan(x), x, out)


defop("special_entr(Tensor input)", "elementwise", **_float_fields("special_entr"), method=False,
      composite=floating(_entr), reference=lambda x: scipy_special().entr(x),
      grad_domain={"input": {"low": 0.1, "high": 5.0}},
      derivative=lambda grad, input: F.mul(grad, F.neg(F.add(F.log(input), 1.0))),
      doc="-x log x for x > 0, 0 at 0, -inf below (torch.special.entr)")


# -- logit -----------------------------------------------------------------------------------------------------

def _logit(x, eps=None):
    if eps is not None:
        x = F.clamp(x, eps, 1.0 - eps)
    return F.log(F.div(x, F.sub(1.0, x)))


def _logit_reference(x, eps=None):
    x = x.astype(np.result_type(x, 0.5))
    if eps is not None:
        x = np.clip(x, eps, 1.0 - eps)
    with np.errstate(all="ignore"):
        return np.log(x / (1.0 - x))


def _logit_derivative(grad, input, eps):
    """1 / (x (1 - x)); with eps, 0 where the input was clamped (PyTorch's logit_backward)."""
    slope = F.div(grad, F.mul(input, F.sub(1.0, input)))
    if eps is None:
        return slope
    outside = F.logical_or(F.lt(input, eps), F.gt(input, 1.0 - eps))
    return F.where(outside, F.zeros_like(slope), slope)


def _logit_samples(make, dtype):
    yield Sample((make((2, 3), low=0.0, high=1.0),), {"eps": 1e-2}, note="eps=1e-2")
    yield Sample((make((4,), low=-0.5, high=1.5), 0.25), note="eps=0.25 clamps both sides")


defop("logit(Tensor input, float? eps=None)", "elementwise", **_float_fields("logit"), inplace=True,
      composite=floating(_logit), reference=_logit_reference, samples=_logit_samples,
      domain={"input": {"low": 0.05, "high": 0.95}}, derivative=_logit_derivative,
      doc="log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given")


# -- xlogy and xlog1py -----------------------------------------------------------------------------------------

def _x_times(log_of):
    """x * log_of(y), 0 where x == 0 (even where log_of(y) is infinite), NaN where y is NaN."""
    def composite(x, y):
        if not is_tensor(y):  # x is a tensor then: y takes its dtype
            y = F.full_like(x, y)
        product = F.mul(x, log_of(y))
        zero = F.zeros_like(product)
        out = F.where(F.eq(x, 0.0), zero, product) if is_tensor(x) else (zero if x == 0 else product)
        return F.where(F.isnan(y), F.add(zero, y), out)
    return floating(composite)


def _x_times_reference(log_of):
    def reference(x, y):
        dt = np.result_type(x, y, 0.5)
        x, y = np.asarray(x, dt), np.asarray(y, dt)
        with np.errstate(all="ignore"):
            out = np.where(x == 0, 0.0, x * log_of(y))
        return np.where(np.isnan(y), np.nan, out).astype(dt)
    return reference


def _x_times_derivative(log_of, slope_of_log):
    """d/dx: log_of(y) where x != 0, else 0; d/dy: x * (log_of)'(y)."""
    def input_derivative(grad, input, other):
        other = other if is_tensor(other) else F.full_like(grad, other)
        nonzero = F.ne(input, 0.0)
        return F.mul(grad, F.where(nonzero, log_of(other), F.zeros_like(grad)))

    def other_derivative(grad, input, other):
        return F.mul(grad, F.mul(input, slope_of_log(other)))
    return {"input": input_derivative, "other": other_derivative}


def _positive_y_samples(make, dtype):
    yield Sample((make((2, 3)), make((2, 3), low=0.1, high=4.0)), note="positive y")
    if dtype.is_floating_point:
        x = make.tensor(np.array([0.0, 0.0, 0.0, 1.5, -2.0]), dtype)
        y = make.tensor(np.array([0.0, math.inf, math.nan, 0.0, 3.0]), dtype)
        # the gradient at x = 0 is PyTorch's convention, not a limit
        yield Sample((x, y), note="x = 0 against 0, inf, NaN", gradcheck=False)


_LOG1P_Y = {"other": {"low": -0.9, "high": 4.0}}
defop("xlogy(Tensor input, Tensor other)", "elementwise", **_float_fields("xlogy"), inplace=True,
      composite=_x_times(lambda y: F.log(y)), reference=_x_times_reference(np.log),
      samples=_positive_y_samples, grad_domain={"other": {"low": 0.1, "high": 4.0}},
      derivative=_x_times_derivative(lambda y: F.log(y), lambda y: F.reciprocal(y)),
      doc="input * log(other), 0 where input is 0 (unless other is NaN)")
defop("special_xlog1py(Tensor input, Tensor other)", "elementwise", **_float_fields("special_xlog1py"),
      method=False, composite=_x_times(lambda y: F.log1p(y)), reference=_x_times_reference(np.log1p),
      samples=_positive_y_samples, grad_domain=_LOG1P_Y,
      derivative=_x_times_derivative(lambda y: F.log1p(y), lambda y: F.reciprocal(F.add(y, 1.0))),
      doc="input * log1p(other), 0 where input is 0 (unless other is NaN)")


# -- mvlgamma (torch.special.multigammaln) -------------------------------------------------------------------

#: The largest dimension p: the p arguments x - i/2 are materialized at once, as in PyTorch
MAX_P = 1 << 20


def _mvlgamma_check(op, args):
    p = args["p"]
    if p < 1:
        raise ArgumentError(f"mvlgamma: p has to be greater than or equal to 1, got p={p}")
    if p > MAX_P:
        raise ArgumentError(f"mvlgamma: p={p} is too large (at most {MAX_P}: each element takes p lgamma terms)")


def _arguments(x, p: int):
    """x - i/2 for i < p, along a new last dim."""
    halves = F.mul(F.arange(p, dtype=x.dtype, device=x.device), 0.5)
    return F.sub(F.unsqueeze(x, -1), halves)


def _mvlgamma(x, p):
    """No domain check, as PyTorch 2 (which dropped its own): at or below (p-1)/2 the log-gamma terms give inf
    or the log of |gamma| of a negative argument."""
    return F.add(F.sum(F.lgamma(_arguments(x, p)), -1), p * (p - 1) / 4 * _LOG_PI)


def _mvlgamma_reference(x, p):
    x = x.astype(np.result_type(x, 0.5))
    return scipy_special().multigammaln(x, p) if x.size else x.copy()


def _mvlgamma_derivative(grad, input, p):
    """Σᵢ ψ(x - i/2) for i < p."""
    return F.mul(grad, F.sum(F.digamma(_arguments(input, p)), -1))


def _mvlgamma_samples(make, dtype):
    if dtype.kind == "bool":  # True is 1: no bool tensor exceeds (p-1)/2 for p >= 3, and p = 1 takes it as lgamma
        yield Sample((make.tensor(np.array([True, True]), dtype), 1), note="p=1")
        return
    for p in (1, 3):
        yield Sample((make((2, 3), low=p / 2 + 0.1, high=6.0), p), note=f"p={p}")
    yield Sample((make((4,), low=3.0, high=8.0, noncontiguous=True),), {"p": 5}, note="p=5, non-contiguous")
    yield Sample((make((0, 2), low=2.0, high=3.0), 2), note="empty")


defop("mvlgamma(Tensor input, int p)", "elementwise", promotion=rules.to_float, kind="composite",
      meta=lambda x, p: broadcast_meta("mvlgamma")(x), normalize=_mvlgamma_check, inplace=True,
      composite=floating(_mvlgamma), reference=_mvlgamma_reference, samples=_mvlgamma_samples,
      derivative=_mvlgamma_derivative, tolerances={"float32": (2e-5, 2e-5), "float64": (1e-9, 1e-9)},
      doc="the multivariate log-gamma of dimension p: Σᵢ lgamma(x - i/2) + p(p-1)/4 log π; "
          "every element must exceed (p-1)/2")
