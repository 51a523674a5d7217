"""Probability distributions with ``torch.distributions``' API, written in Ember tensor ops (any backend).

    from ember.distributions import Normal, kl_divergence
    p = Normal(ember.zeros(3), ember.ones(3))
    x = p.rsample((10,))            # (10, 3), differentiable in loc and scale
    p.log_prob(x).sum().backward()
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, PowerTransform, SigmoidTransform,
                         SoftmaxTransform, TanhTransform, Transform)
from .uniform import Uniform

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Categorical", "ComposeTransform", "Dirichlet", "Distribution",
           "ExpTransform", "Exponential", "Gamma", "Independent", "Laplace", "LogNormal", "MultivariateNormal",
           "Normal", "OneHotCategorical", "Poisson", "PowerTransform", "SigmoidTransform", "SoftmaxTransform",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "constraints", "kl_divergence",
           "register_kl", "transforms"]
