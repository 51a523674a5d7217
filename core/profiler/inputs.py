"""What the profiler reads off an op call without running any op: shapes, dtypes, the device, the bytes
its outputs allocated and its floating-point operations. Only tensor metadata is read (never values)."""
from __future__ import annotations

import math

from ..dispatch.execution import links
from ..dispatch.schema.defaults import get_default_device
from ..dispatch.schema.device import device as Device


def _values(args: tuple, kwargs: dict | None):
    yield from args
    if kwargs:
        yield from kwargs.values()


def _is_tensor(value) -> bool:
    return isinstance(value, links.tensor.type)


def input_shapes_and_dtypes(args: tuple, kwargs: dict | None) -> tuple[list, list]:
    """Per argument, as PyTorch records them: a tensor's shape and dtype name; a list of tensors'
    shapes and ``"TensorList"``; ``[]`` and ``"Scalar"`` for a number; ``[]`` and ``""`` otherwise."""
    shapes, dtypes = [], []
    for value in _values(args, kwargs):
        if _is_tensor(value):
            shapes.append(list(value._data.shape))
            dtypes.append(value._dtype.name)
        elif isinstance(value, (list, tuple)) and value and all(v is None or _is_tensor(v) for v in value):
            shapes.append([list(v._data.shape) if v is not None else [] for v in value])
            dtypes.append("TensorList")
        else:
            shapes.append([])
            dtypes.append("Scalar" if isinstance(value, (bool, int, float, complex)) else "")
    return shapes, dtypes


def call_device(args: tuple, kwargs: dict | None) -> Device:
    """The device an op call runs on: its first tensor's, else its ``device`` argument's, else the default."""
    for value in _values(args, kwargs):
        if _is_tensor(value):
            return value._device
        if isinstance(value, (list, tuple)):
            for item in value:
                if _is_tensor(item):
                    return item._device
    for value in _values(args, kwargs):
        if isinstance(value, Device):
            return value
    return get_default_device()


def outputs_of(result) -> list:
    """The tensors an op returned (one, or a tuple of them)."""
    if _is_tensor(result):
        return [result]
    if isinstance(result, (list, tuple)):
        return [r for r in result if _is_tensor(r)]
    return []


def nbytes(t) -> int:
    return math.prod(t._data.shape) * t._dtype.itemsize


def allocated_bytes(op, args: tuple, kwargs: dict | None, outputs: list) -> int:
    """Bytes of new storage among ``outputs``: not a view, not an input written in place or passed through."""
    if op.view or op.mutates:
        return 0
    inputs = [v for v in _values(args, kwargs) if _is_tensor(v)]
    return sum(nbytes(t) for t in outputs
               if t._base is None and not any(t is i for i in inputs))


def _last_dim(t) -> int:
    return t._data.shape[-1] if t._data.shape else 1


def flops(name: str, args: tuple, outputs: list) -> int:
    """Floating-point operations of the ops PyTorch counts (matrix products, convolutions, add and mul)."""
    if not outputs or not args or not _is_tensor(args[0]):
        return 0
    out = math.prod(outputs[0]._data.shape)
    if name in ("matmul", "mm", "bmm", "linear"):  # one multiply and one add per output per inner element
        return 2 * out * _last_dim(args[0])
    if name in ("conv1d", "conv2d") and len(args) > 1 and _is_tensor(args[1]):
        return 2 * out * math.prod(args[1]._data.shape[1:])
    if name in ("add", "sub", "mul", "div"):
        return out
    return 0
