"""Dirichlet(concentration): distributions on the simplex, the classes along the last dim."""
from __future__ import annotations

from ..dispatch.ops import F
from ..functions import where
from ..tensor import Size
from . import constraints
from ._gamma import standard_gamma
from .distribution import Distribution
from .utils import eps_of, tiny_of, xlogy

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """rsample normalizes reparameterized gamma draws, so gradients reach the concentration."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None) -> None:
        if concentration.ndim < 1:
            raise ValueError(f"Dirichlet: concentration must have at least one dimension, got shape "
                             f"{tuple(concentration.shape)}")
        self.concentration = concentration
        super().__init__(Size(concentration.shape[:-1]), Size(concentration.shape[-1:]),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Dirichlet, batch_shape, _instance, ("concentration",))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        shifted = (self.concentration - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, keepdim=True)
        # where every concentration is below 1 the density peaks at a vertex: the largest one's
        vertex = F.one_hot(mode.argmax(-1), shifted.shape[-1]).to(mode.dtype)
        below = (self.concentration < 1).all(-1, keepdim=True)
        return where(below, vertex, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total ** 2 * (total + 1))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        draws = standard_gamma(self.concentration.expand(shape))
        simplex = draws / draws.sum(-1, keepdim=True)
        eps = eps_of(simplex.dtype)
        return simplex.clamp(min=tiny_of(simplex.dtype), max=1 - eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (c.lgamma().sum(-1) - total.lgamma() - (k - total) * total.digamma()
                - ((c - 1.0) * c.digamma()).sum(-1))
