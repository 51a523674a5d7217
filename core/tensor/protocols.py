"""Python's protocols on tensors: printing (``repr``, ``format``), containers (``in``, ``reversed``, ``del``),
copying and pickling, NumPy's ``__array_wrap__`` and ``as_subclass``. Indexing is ``indexing``'s."""
from __future__ import annotations

import copyreg
from numbers import Number

from ..creation import from_numpy
from ..dispatch.ops import F
from ..dispatch.schema.errors import EmberError
from ..printing import tensor_repr
from . import Tensor, rehouse


def repr_(self: Tensor) -> str:
    return tensor_repr(self)


def format_(self: Tensor, spec: str) -> str:
    """A 0-d tensor formats as its Python number (``f"{loss:.4f}"``); others only with an empty spec."""
    if self._data.shape == ():
        return format(self.item(), spec)
    if spec:
        raise TypeError("unsupported format string passed to Tensor.__format__")
    return repr(self)


def deepcopy(self: Tensor, memo: dict) -> Tensor:
    out = self.clone().detach()
    out.requires_grad = self.requires_grad
    memo[id(self)] = out
    return out


def contains(self: Tensor, element) -> bool:
    """``element in t``: whether any element of t equals ``element`` (a number or a tensor broadcast to t)."""
    if not isinstance(element, (Tensor, Number)):  # a RuntimeError, as PyTorch's
        raise EmberError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                         f"{type(element)}.")
    return bool(F.any(F.eq(self, element)).item())


def reversed_(self: Tensor) -> Tensor:
    """``reversed(t)``: t flipped along its first dim (a 0-d tensor is itself)."""
    return self if self.ndim == 0 else F.flip(self, (0,))


def delitem(self: Tensor, key) -> None:
    raise TypeError("Tensor does not support deleting items")


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An instance of ``cls`` (a Tensor subclass) sharing this tensor's storage and staying in its graph."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of ember.Tensor, got {cls!r}")
    return rehouse(F.view(self, tuple(self.shape)), cls)


def array_wrap(self: Tensor, array, context=None, return_scalar: bool = False) -> Tensor:
    """A NumPy ufunc's result over tensors (``np.sin(t)``) as a CPU tensor sharing its memory; bool results
    become uint8, as in PyTorch."""
    if array.dtype == bool:
        array = array.astype("uint8")
    return from_numpy(array)


def reduce_ex(self: Tensor, protocol: int):
    """Pickling goes through the reducer ``ember.serialization`` registers for Tensor (subclasses included)."""
    return copyreg.dispatch_table[Tensor](self)
