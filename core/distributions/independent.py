"""Independent: reinterprets some batch dims of a distribution as event dims."""
from __future__ import annotations

from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """``base_distribution`` with its rightmost ``reinterpreted_batch_ndims`` batch dims as one event:
    log_prob and entropy sum over them."""
    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args=None) -> None:
        batch = tuple(base_distribution.batch_shape)
        if not 0 <= reinterpreted_batch_ndims <= len(batch):
            raise ValueError(f"Independent: reinterpreted_batch_ndims must be between 0 and the base batch rank "
                             f"{len(batch)} (batch shape {batch}), got {reinterpreted_batch_ndims}")
        split = len(batch) - reinterpreted_batch_ndims
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        super().__init__(Size(batch[:split]), Size(batch[split:] + tuple(base_distribution.event_shape)),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = Size(batch_shape)
        inner = tuple(self.base_dist.batch_shape)[len(self._batch_shape):]
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + inner)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        return False if self.reinterpreted_batch_ndims else self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        return constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims) \
            if self.reinterpreted_batch_ndims else self.base_dist.support

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True):
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
