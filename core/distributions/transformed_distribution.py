"""TransformedDistribution: a base distribution pushed through transforms; LogNormal is one."""
from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .independent import Independent
from .normal import Normal
from .transforms import ExpTransform, Transform
from .utils import sum_rightmost

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """Samples are ``transforms`` applied in order to base samples; log_prob subtracts the log-determinants
    (change of variables). Transforms whose event_dim exceeds the base's event rank reinterpret base batch
    dims as event dims."""
    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms, validate_args=None) -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, list) or not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"TransformedDistribution: transforms must be a Transform or a list of Transforms, "
                             f"got {transforms!r}")
        self.transforms = transforms
        event_dim = max([len(base_distribution.event_shape)] + [t.event_dim for t in transforms])
        extra = event_dim - len(base_distribution.event_shape)
        base = Independent(base_distribution, extra) if extra else base_distribution
        self.base_dist = base
        shape = tuple(base.batch_shape) + tuple(base.event_shape)
        split = len(shape) - event_dim
        super().__init__(Size(shape[:split]), Size(shape[split:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = Size(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        extra = len(self._event_shape) - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def sample(self, sample_shape=Size()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob, y = 0.0, value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotone_sign(self):
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        return sign

    def cdf(self, value):
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        value = self.base_dist.cdf(value)
        sign = self._monotone_sign()
        return value if isinstance(sign, int) and sign == 1 else sign * (value - 0.5) + 0.5

    def icdf(self, value):
        sign = self._monotone_sign()
        value = value if isinstance(sign, int) and sign == 1 else sign * (value - 0.5) + 0.5
        value = self.base_dist.icdf(value)
        for transform in self.transforms:
            value = transform(value)
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_dist!r}, {self.transforms!r})"


class LogNormal(TransformedDistribution):
    """exp(Normal(loc, scale))."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale ** 2 / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale ** 2).exp()

    @property
    def variance(self):
        s2 = self.scale ** 2
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
