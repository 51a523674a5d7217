"""Helpers the distributions share: broadcasting parameters, probabilities and logits, cached properties."""
from __future__ import annotations

import functools
from numbers import Number

from ..autograd.grad_mode import enable_grad
from ..creation import tensor
from ..dispatch.schema.dtypes import get_default_dtype
from ..dispatch.schema.errors import ShapeError
from ..dispatch.schema.meta import broadcast_shapes
from ..dispatch.ops import F
from ..dispatch.schema.promotion import promote_types
from ..functions import full, laid_out, where
from ..memory_format import preserve_format
from ..tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "eps_of", "full_like", "lazy_property", "logits_to_probs", "ones_like",
           "probs_to_logits", "softplus", "sum_rightmost", "tiny_of", "xlogy", "zeros_like"]

_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}
_TINY = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126, "float32": 2.0 ** -126, "float64": 2.0 ** -1022}
_MIN = {"float16": -65504.0, "bfloat16": -3.3895e38, "float32": -3.4028234663852886e38,
        "float64": -1.7976931348623157e308}


def eps_of(dtype) -> float:
    """Machine epsilon of a floating dtype (``torch.finfo(dtype).eps``)."""
    return _EPS[dtype.name]


def tiny_of(dtype) -> float:
    """The smallest normal positive number of a floating dtype (``torch.finfo(dtype).tiny``)."""
    return _TINY[dtype.name]


def min_of(dtype) -> float:
    """The most negative finite number of a floating dtype (``torch.finfo(dtype).min``)."""
    return _MIN[dtype.name]


# ember.zeros_like and its kin, as the distributions call them: the op, its result laid out as x is
# (PyTorch's preserve_format: a channels_last x gives a channels_last result).

def zeros_like(x: Tensor) -> Tensor:
    return laid_out(F.zeros_like(x), preserve_format, x, "zeros_like")


def ones_like(x: Tensor) -> Tensor:
    return laid_out(F.ones_like(x), preserve_format, x, "ones_like")


def full_like(x: Tensor, fill_value) -> Tensor:
    return laid_out(F.full_like(x, fill_value), preserve_format, x, "full_like")


def broadcast_all(*values) -> tuple:
    """Tensors and numbers broadcast to one shape; numbers become tensors of the tensors' dtype and device
    (the default dtype when every value is a number)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, (Tensor, Number)):
            raise ValueError(f"Input arguments must all be instances of numbers.Number or ember.Tensor, "
                             f"got {type(v).__name__}")
    if not tensors:
        dtype = get_default_dtype()
        return tuple(tensor(float(v), dtype=dtype) for v in values)
    dtype, device = tensors[0].dtype, tensors[0].device
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    shape = broadcast_shapes("broadcast_all", *[tuple(t.shape) for t in tensors])
    out = []
    for v in values:
        if not isinstance(v, Tensor):
            v = full(shape, float(v), dtype=dtype if dtype.is_floating_point else get_default_dtype(),
                     device=device)
        elif tuple(v.shape) != shape:
            v = v.expand(shape)
        out.append(v)
    return tuple(out)


def expand_to(value: Tensor, shape: tuple, what: str) -> Tensor:
    """``value`` broadcast to ``shape``, with a ValueError naming ``what`` when it cannot be."""
    try:
        return value.expand(tuple(shape))
    except ShapeError as error:
        raise ValueError(f"{what}: cannot expand a tensor of shape {tuple(value.shape)} to {tuple(shape)}") from error


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept eps away from 0 and 1, so that their logs stay finite."""
    eps = eps_of(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds for binary probabilities, log-probabilities for categorical ones."""
    clamped = clamp_probs(probs)
    return clamped.log() - (-clamped).log1p() if is_binary else clamped.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """The sigmoid of binary logits, the softmax of categorical ones (over the last dim)."""
    return logits.sigmoid() if is_binary else F.softmax(logits, -1)


class lazy_property:
    """A property computed once per instance on first use and then stored as an attribute (so a
    distribution built from ``logits`` computes ``probs`` only if asked)."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum over the rightmost ``dim`` dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))."""
    return x.clamp(min=0) + (-x.abs()).exp().log1p()


def xlogy(x, y: Tensor) -> Tensor:
    """x · log(y), 0 where x == 0 (also where y == 0)."""
    x_tensor = x if isinstance(x, Tensor) else full_like(y, float(x))
    product = x_tensor * y.log()
    return where(x_tensor == 0, zeros_like(product), product)
