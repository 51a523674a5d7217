"""``apply_``, ``map_`` and ``map2_``: Python callables over a CPU tensor's elements, in place (as in PyTorch)."""
from __future__ import annotations

import builtins

from ..creation import tensor
from ..dispatch.schema.binding import tensor_argument
from ..dispatch.ops import F
from ..legacy_types import type_string
from . import Tensor


def _require_cpu(self, name: str) -> None:
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def _store(self, results: list, name: str) -> Tensor:
    try:
        values = tensor(results, dtype=self.dtype, device=self.device)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: the callable's results can't be stored in a {self.dtype.name} tensor: "
                        f"{exc}") from None
    return self.copy_(F.reshape(values, tuple(self.shape)))


def _require_callable(name: str, value) -> None:
    if not builtins.callable(value):  # the parameter is named ``callable``, as in PyTorch
        raise TypeError(f"{name}(): argument 'callable' must be callable, not {type(value).__name__}")


def apply_(self, callable) -> Tensor:
    """Replace each element ``x`` by ``callable(x)`` (a Python number in, one out), in place."""
    _require_cpu(self, "apply_")
    _require_callable("apply_", callable)
    return _store(self, [callable(x) for x in F.reshape(self, (-1,)).tolist()], "apply_")


def map_(self, tensor: Tensor, callable) -> Tensor:
    """Replace each element ``x`` by ``callable(x, y)``, ``y`` from ``tensor`` broadcast to this shape."""
    return _map(self, "map_", (("other", tensor),), callable)


def map2_(self, x: Tensor, y: Tensor, callable) -> Tensor:
    """Replace each element ``s`` by ``callable(s, a, b)``, ``a`` and ``b`` from ``x`` and ``y`` broadcast to
    this shape."""
    return _map(self, "map2_", (("x", x), ("y", y)), callable)


def _map(self, name: str, operands: tuple, callable) -> Tensor:
    """map_ and map2_: ``callable`` over this tensor's elements and the operands' (CPU tensors of this dtype,
    broadcast to this shape), in place."""
    _require_cpu(self, name)
    for position, (argument, other) in enumerate(operands, start=1):
        tensor_argument(name, argument, other, position=position)
    _require_callable(name, callable)
    columns = [F.reshape(self, (-1,)).tolist()]
    for argument, other in operands:
        if other.device.type != "cpu" or other.dtype is not self.dtype:
            raise TypeError(f"{name}: expected {type_string(self)} for '{argument}' (got {type_string(other)})")
        columns.append(F.reshape(F.expand(other, tuple(self.shape)), (-1,)).tolist())
    return _store(self, [callable(*values) for values in zip(*columns)], name)
