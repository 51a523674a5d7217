"""Bijections with log-determinants, for TransformedDistribution (``torch.distributions.transforms``).

A transform maps ``x`` in its ``domain`` to ``y = t(x)`` in its ``codomain``; ``t.inv`` is the inverse and
``t.log_abs_det_jacobian(x, y)`` is log |dy/dx| summed over the transform's own ``event_dim`` dims.
With ``cache_size=1`` a transform remembers its last (x, y), so ``t.inv(t(x))`` returns ``x`` itself.
"""
from __future__ import annotations

import math
import weakref

from ..dispatch.ops import F
from ..tensor import Tensor
from . import constraints
from .utils import eps_of, full_like, softplus, sum_rightmost, tiny_of, zeros_like

__all__ = ["AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform", "SigmoidTransform",
           "SoftmaxTransform", "TanhTransform", "Transform", "identity_transform"]


class Transform:
    """Base class: subclasses define ``_call``, ``_inverse``, and ``log_abs_det_jacobian`` where bijective."""
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"{type(self).__name__}: cache_size must be 0 or 1, got {cache_size}")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = (None, None)

    @property
    def event_dim(self) -> int:
        return self.domain.event_dim

    @property
    def sign(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no defined sign")

    @property
    def inv(self) -> "Transform":
        inverse = self._inv() if self._inv is not None else None
        if inverse is None:
            inverse = _InverseTransform(self)
            self._inv = weakref.ref(inverse)
        return inverse

    def with_cache(self, cache_size: int = 1) -> "Transform":
        """The same transform with the given cache size (self when it already has it)."""
        if self._cache_size == cache_size:
            return self
        return self._rebuilt(cache_size)

    def _rebuilt(self, cache_size: int) -> "Transform":
        return type(self)(cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not define its forward map")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} is not invertible")

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no log_abs_det_jacobian")

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __eq__(self, other) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """``t.inv``: swaps the roles of x and y."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def inv(self) -> Transform:
        return self._inv

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self) -> bool:
        return self._inv.bijective

    @property
    def sign(self) -> int:
        return self._inv.sign

    @property
    def event_dim(self) -> int:
        return self._inv.event_dim

    def __call__(self, x):
        return self._inv._inv_call(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"{self._inv!r}.inv"


class ComposeTransform(Transform):
    """``parts`` applied left to right; the log-determinants add up."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    @property
    def event_dim(self) -> int:
        return max((p.event_dim for p in self.parts), default=0)

    @property
    def domain(self):
        return self.parts[0].domain if self.parts else constraints.real

    @property
    def codomain(self):
        return self.parts[-1].codomain if self.parts else constraints.real

    @property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> int:
        sign = 1
        for p in self.parts:
            sign *= p.sign
        return sign

    @property
    def inv(self) -> Transform:
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def _rebuilt(self, cache_size: int) -> Transform:
        return ComposeTransform([p.with_cache(cache_size) for p in self.parts], cache_size=cache_size)

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return zeros_like(x)
        total = 0
        for part in self.parts:
            y_part = part(x)
            term = sum_rightmost(part.log_abs_det_jacobian(x, y_part), self.event_dim - part.event_dim)
            total = total + term
            x = y_part
        return total

    def __repr__(self) -> str:
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """y = exp(x)."""
    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    """y = loc + scale · x, elementwise; ``event_dim`` dims on the right form one event."""
    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    @property
    def sign(self):
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _rebuilt(self, cache_size: int) -> Transform:
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, Tensor):
            result = self.scale.abs().log()
        else:
            result = full_like(x, math.log(abs(self.scale)))
        shape = tuple(x.shape)
        if tuple(result.shape) != shape:
            result = result.expand(shape)
        return sum_rightmost(result, self._event_dim)

    def __repr__(self) -> str:
        return f"AffineTransform(loc={self.loc}, scale={self.scale}, event_dim={self._event_dim})"


class SigmoidTransform(Transform):
    """y = 1 / (1 + exp(-x))."""
    domain, codomain, bijective, sign = constraints.real, constraints.unit_interval, True, +1

    def _call(self, x):
        y = x.sigmoid()
        return y.clamp(min=tiny_of(y.dtype), max=1 - eps_of(y.dtype))

    def _inverse(self, y):
        y = y.clamp(min=tiny_of(y.dtype), max=1 - eps_of(y.dtype))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""
    domain, codomain, bijective, sign = constraints.real, constraints.interval(-1.0, 1.0), True, +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * (y.log1p() - (-y).log1p())

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh² x) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    @property
    def sign(self):
        if isinstance(self.exponent, Tensor):
            return self.exponent.sign()
        return 1 if self.exponent > 0 else -1 if self.exponent < 0 else 0

    def _rebuilt(self, cache_size: int) -> Transform:
        return PowerTransform(self.exponent, cache_size=cache_size)

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1.0 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def __repr__(self) -> str:
        return f"PowerTransform(exponent={self.exponent})"


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dim: onto the simplex, not injective (so no log-determinant)."""
    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        return F.softmax(x, -1)

    def _inverse(self, y):
        return y.log()
