"""Gamma(concentration, rate)."""
from __future__ import annotations

from ..creation import as_tensor
from ..tensor import Size
from . import constraints
from ._gamma import gamma_cdf, standard_gamma
from .distribution import Distribution
from .utils import broadcast_all, tiny_of, xlogy

__all__ = ["Gamma"]


class Gamma(Distribution):
    """Shape ``concentration`` and inverse scale ``rate``; rsample is reparameterized implicitly (see _gamma)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(Size(self.concentration.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate ** 2

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        draws = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return draws.clamp(min=tiny_of(draws.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, x = broadcast_all(self.concentration, self.rate * value)
        return gamma_cdf(a, x)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()
