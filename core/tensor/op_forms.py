"""Tensor methods whose PyTorch form differs from their op's signature: ``x.where(cond, y)`` takes the
condition first, ``x.polygamma(n)`` takes n second, ``x.max()`` has several overloads, ``x.random_(to)``
reads a lone bound as the upper one, ``x.expand_as(y)`` takes a tensor for a size, ..."""
from __future__ import annotations

from typing import Callable

from .. import functions
from ..dispatch.schema.binding import tensor_argument
from ..dispatch.ops import F
from ..dispatch.ops.linalg import products
from ..dispatch.ops.indexing import sets
from . import Tensor
from .inplace import write_result


def where(self: Tensor, condition: Tensor, other) -> Tensor:
    return F.where(condition, self, other)


def polygamma(self: Tensor, n: int) -> Tensor:
    """torch.polygamma(n, input) takes n first."""
    return F.polygamma(n, self)


def polygamma_(self: Tensor, n: int) -> Tensor:
    return write_result(self, F.polygamma(n, self), "polygamma")


def random_(self: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """``random_()``, ``random_(to)`` or ``random_(from, to)``: a lone positional argument is ``to``."""
    if len(args) == 1 and not kwargs:
        return F.random_(self, 0, args[0], generator=generator)
    return F.random_(self, *args, generator=generator, **kwargs)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """transpose under NumPy's names (a method and a function, with NumPy's argument names)."""
    return F.transpose(input, axis0, axis1)


def _like_method(name: str, op: Callable) -> Callable:
    """``expand_as``/``view_as``/``reshape_as``: ``op`` to the shape of the tensor ``other``."""
    def method(self, other):
        return op(self, tuple(tensor_argument(name, "other", other, position=1).shape))
    method.__name__ = method.__qualname__ = name
    return method


def _split_method(name: str) -> Callable:
    """Tensor.hsplit and kin: PyTorch's overloads take ``sections`` (an int) or ``indices`` (ints, also as
    varargs: ``t.hsplit(1, 2)``)."""
    function = getattr(F, name)

    def method(self, *indices_or_sections, sections=None, indices=None):
        by_keyword = [v for v in (sections, indices) if v is not None]
        if len(by_keyword) + bool(indices_or_sections) != 1:
            raise TypeError(f"{name}() takes one argument: sections, or indices (also as varargs)")
        if by_keyword:
            return function(self, by_keyword[0])
        only = len(indices_or_sections) == 1
        return function(self, indices_or_sections[0] if only else list(indices_or_sections))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = function.__doc__
    return method


def methods() -> dict[str, Callable]:
    """Every method of this module's kind, by name."""
    found = {"where": where, "polygamma": polygamma, "polygamma_": polygamma_, "random_": random_,
             "expand_as": _like_method("expand_as", F.expand), "view_as": _like_method("view_as", F.view),
             "reshape_as": _like_method("reshape_as", F.reshape),
             # self binds to input; Python checks the argument count at the call
             "max": functions.max, "min": functions.min, "median": functions.median,
             "nanmedian": functions.nanmedian, "var": functions.var, "std": functions.std,
             "clone": functions.clone, "gather": functions.gather}
    found.update({name: _split_method(name) for name in ("hsplit", "vsplit", "dsplit")})
    found.update(products.METHODS)  # dot(other)
    found.update(sets.METHODS)  # unique and its kin pick outputs by flags
    return found
