"""``Distribution``: the base class, with PyTorch's shapes, validation and sampling protocol.

Shapes: a draw has shape ``sample_shape + batch_shape + event_shape``; ``log_prob`` reduces the event dims.
Validation (on by default, as in PyTorch; ``Distribution.set_default_validate_args(False)`` turns it off)
checks every parameter against ``arg_constraints`` when a distribution is built and every value against
``support`` in ``log_prob``, raising ValueError that names the distribution, the parameter, its shape and
the constraint.
"""
from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..tensor import Size, Tensor
from . import constraints
from .utils import expand_to, lazy_property

__all__ = ["Distribution"]


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"tensor of shape {tuple(value.shape)} and dtype {value.dtype.name}"
    return type(value).__name__


class Distribution:
    """Base class of every distribution; subclasses set ``arg_constraints``, ``support`` and the methods."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints: dict = {}
    support = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and support validation on or off for every distribution built from now on."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args: bool | None = None) -> None:
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                continue  # not given, only derivable from another parameter (probs from logits)
            value = getattr(self, name)
            if not isinstance(value, Tensor):
                raise ValueError(f"{type(self).__name__}: parameter {name} must be a tensor, got {_describe(value)}")
            valid = constraint.check(value)
            if not bool(valid.all().item()):
                bad = int((~valid).sum().item())
                raise ValueError(
                    f"{type(self).__name__}: parameter {name} ({_describe(value)}) must satisfy the constraint "
                    f"{constraint!r}, but {bad} of {valid.numel()} entries do not; found {name} = {value}")

    # -- shapes --------------------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """A distribution with the same parameters broadcast to ``batch_shape`` (no copies)."""
        raise NotImplementedError(f"{type(self).__name__} does not support expand()")

    def _expand_parameters(self, cls, batch_shape, _instance, names):
        """The ``expand`` of distributions that are their parameters: each one set (given or already computed)
        is broadcast to the new batch shape, keeping its own trailing dims (a Categorical's classes)."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                trailing = tuple(value.shape[len(self._batch_shape):])
                setattr(new, name, expand_to(value, tuple(batch_shape) + trailing, f"{type(self).__name__}.expand"))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                                      f"__init__ must also define expand()")
        return cls.__new__(type(self)) if _instance is None else _instance

    # -- statistics ----------------------------------------------------------------------------------------
    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    # -- sampling and densities ----------------------------------------------------------------------------
    def sample(self, sample_shape=Size()) -> Tensor:
        """Draws without gradient; reparameterized distributions use rsample under no_grad."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (has_rsample is False); "
                                  f"use sample()")

    def sample_n(self, n: int) -> Tensor:
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def _validate_sample(self, value) -> None:
        """ValueError unless ``value`` is a tensor whose shape fits and whose entries lie in the support."""
        name = type(self).__name__
        if not isinstance(value, Tensor):
            raise ValueError(f"{name}.log_prob: the value must be a tensor, got {type(value).__name__}")
        event_dims = len(self._event_shape)
        if tuple(value.shape[value.ndim - event_dims:]) != tuple(self._event_shape) or value.ndim < event_dims:
            raise ValueError(f"{name}.log_prob: the rightmost dims of a value of shape {tuple(value.shape)} must "
                             f"match the event shape {tuple(self._event_shape)}")
        actual, expected = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"{name}.log_prob: a value of shape {actual} does not broadcast with the batch and "
                                 f"event shape {expected}")
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        valid = support.check(value)
        if not bool(valid.all().item()):
            raise ValueError(f"{name}.log_prob: the value ({_describe(value)}) is outside the support {support!r}; "
                             f"found value = {value}")

    def __repr__(self) -> str:
        names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        parts = []
        for k in names:
            v = self.__dict__[k]
            parts.append(f"{k}: {v if v.numel() == 1 else Size(v.shape)}")
        return f"{type(self).__name__}({', '.join(parts)})"
