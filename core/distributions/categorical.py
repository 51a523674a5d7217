"""Categorical(probs= | logits=) over {0, ..., K-1}, the classes along the last dim."""
from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..dispatch.schema.meta import broadcast_shapes
from ..dispatch.ops import F
from ..functions import arange, full
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, min_of, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Class indices drawn with probabilities ``probs`` (normalized over the last dim) or softmax(``logits``)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError(f"{type(self).__name__}: pass either probs or logits, not both and not neither")
        param = probs if probs is not None else logits
        if param.ndim < 1:
            raise ValueError(f"{type(self).__name__}: probs/logits must have at least one dimension, got shape "
                             f"{tuple(param.shape)}")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = param.shape[-1]
        super().__init__(Size(param.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(Categorical, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__["probs"] if "probs" in self.__dict__ else new.__dict__["logits"]
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def mean(self):
        return full(tuple(self._extended_shape()), float("nan"), dtype=self._param.dtype,
                    device=self._param.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        count = 1
        for size in sample_shape:
            count *= size
        with no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            draws = F.multinomial(flat, count, replacement=True).T  # (count, batch entries)
            return draws.reshape(shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        shape = broadcast_shapes("Categorical.log_prob", tuple(index.shape), tuple(self.logits.shape[:-1]) + (1,))
        index = index.expand(shape)
        logits = self.logits.expand(tuple(shape[:-1]) + (self._num_events,))
        return logits.gather(-1, index).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=min_of(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = arange(self._num_events, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((self._num_events,) + tuple(self._batch_shape)) if expand else values
