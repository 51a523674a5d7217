"""KL divergence KL(p ‖ q) between distributions, with ``register_kl`` to add pairs.

The implementation for a pair is the registered one whose classes are the most specific match for
(type(p), type(q)) by method resolution order, as in PyTorch.
"""
from __future__ import annotations

import math

from ..dispatch.schema.meta import broadcast_shapes
from ..functions import where
from ..tensor import Tensor
from ._linalg import diagonal, solve_triangular
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .uniform import Uniform
from .utils import full_like, softplus, sum_rightmost, zeros_like

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY: dict = {}
_CACHE: dict = {}


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal) def kl(p, q): ...``."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)
            and isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"register_kl expects two Distribution subclasses, got {type_p!r} and {type_q!r}")

    def decorator(fn):
        _REGISTRY[type_p, type_q] = fn
        _CACHE.clear()
        return fn
    return decorator


def _lookup(type_p, type_q):
    key = (type_p, type_q)
    if key not in _CACHE:
        matches = [(type_p.__mro__.index(p) + type_q.__mro__.index(q), fn)
                   for (p, q), fn in _REGISTRY.items() if issubclass(type_p, p) and issubclass(type_q, q)]
        _CACHE[key] = min(matches, key=lambda m: m[0])[1] if matches else None
    return _CACHE[key]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p ‖ q), one value per batch entry; NotImplementedError for pairs nobody registered."""
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"kl_divergence: no KL(p || q) is registered for p of type {type(p).__name__} "
                                  f"and q of type {type(q).__name__}; add one with register_kl")
    return fn(p, q)


def _infinite_where(condition: Tensor, value: Tensor) -> Tensor:
    return where(condition, full_like(value, math.inf), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    ratio = (p.scale / q.scale) ** 2
    distance = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (ratio + distance - 1 - ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # p log(p/q) + (1-p) log((1-p)/(1-q)) in logits, finite at p in {0, 1}
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(q.probs == 0, full_like(t1, math.inf), t1)
    t1 = where(p.probs == 0, zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(q.probs == 1, full_like(t2, math.inf), t2)
    t2 = where(p.probs == 1, zeros_like(t2), t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = where(q.probs == 0, full_like(t, math.inf), t)
    t = where(p.probs == 0, zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a_p, a_q = p.concentration, q.concentration
    return ((a_p - a_q) * a_p.digamma() - a_p.lgamma() + a_q.lgamma() + a_q * (p.rate.log() - q.rate.log())
            + a_p * (q.rate / p.rate - 1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a_p, a_q = p.concentration, q.concentration
    total_p = a_p.sum(-1)
    return (total_p.lgamma() - a_q.sum(-1).lgamma() - (a_p.lgamma() - a_q.lgamma()).sum(-1)
            + ((a_p - a_q) * (a_p.digamma() - total_p.unsqueeze(-1).digamma())).sum(-1))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs() / q.scale
    return -ratio.log() + distance + ratio * (-(p.loc - q.loc).abs() / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    # rate_p log(rate_p / rate_q) - (rate_p - rate_q); 0 log 0 = 0, and +inf where q's rate is 0 but p's is not
    log_ratio = p.rate.log() - q.rate.log()
    term = where(p.rate == 0, zeros_like(log_ratio), p.rate * log_ratio)
    return term - (p.rate - q.rate)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(f"kl_divergence: MultivariateNormals of event shapes {tuple(p.event_shape)} and "
                         f"{tuple(q.event_shape)} cannot be compared")
    n = p.event_shape[0]
    batch = broadcast_shapes("kl_divergence", tuple(p.batch_shape), tuple(q.batch_shape))
    L_p = p._unbroadcasted_scale_tril.expand(batch + (n, n))
    L_q = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    half_log_det = diagonal(L_q).log().sum(-1) - diagonal(L_p).log().sum(-1)
    trace = (solve_triangular(L_q, L_p, upper=False) ** 2).flatten(-2).sum(-1)  # tr(Σq⁻¹ Σp)
    diff = (q.loc - p.loc).expand(batch + (n,)).unsqueeze(-1)
    mahalanobis = (solve_triangular(L_q, diff, upper=False) ** 2).flatten(-2).sum(-1)
    return half_log_det + 0.5 * (trace + mahalanobis - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independents with different reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
