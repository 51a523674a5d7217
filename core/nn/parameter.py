"""``nn.Parameter``: a tensor that a Module registers as a learnable parameter.

Parameters are ordinary Ember tensors (so every fast path applies to them) that are also
registered, weakly, by identity; ``isinstance(x, nn.Parameter)`` checks that registration.
(A WeakSet would compare tensors with ``==``, which is elementwise.)
"""
from __future__ import annotations

import weakref

from ..tensor import Tensor
from .lazy_paths import lazy_attributes

_parameters: dict[int, weakref.ref] = {}


def _register(t: Tensor) -> None:
    key = id(t)
    _parameters[key] = weakref.ref(t, lambda _, key=key: _parameters.pop(key, None))


def is_parameter(t) -> bool:
    ref = _parameters.get(id(t))
    return ref is not None and ref() is t


class _ParameterMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """``Parameter(data, requires_grad=True)`` marks ``data`` (no copy) as a parameter and returns it."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from .. import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        param = data.detach() if data.grad_fn is not None else data
        if requires_grad and param._dtype.is_inexact:
            param.requires_grad = True
        elif requires_grad:
            raise RuntimeError(f"Parameter: only floating point and complex tensors can require gradients, got "
                               f"{param.dtype}")
        _register(param)
        return param


class Buffer:
    """``nn.Buffer(tensor, persistent=True)``: assigning one to a Module attribute registers a buffer."""

    def __init__(self, data: Tensor, persistent: bool = True) -> None:
        self.data = data
        self.persistent = persistent


__getattr__ = lazy_attributes(__name__, ("UninitializedParameter", "UninitializedBuffer"))  # defined in .modules.lazy
