"""Tensors from Python data and NumPy arrays: ``ember.tensor``, ``from_numpy``, ``as_tensor``."""
from __future__ import annotations

import numpy as np

from .dispatch import registry
from .dispatch.defaults import get_default_device
from .dispatch.dtypes import ALL_DTYPES, as_dtype, bool_, get_default_dtype, int64
from .dispatch.errors import DeviceError, DtypeError
from .tensor import Tensor, wrap

_NUMPY_NAMES = {d.name for d in ALL_DTYPES}


def _default_device():
    return get_default_device()


def _infer_dtype(data, array: np.ndarray):
    """PyTorch's inference: NumPy arrays keep their dtype; Python floats take the default float dtype."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if array.dtype.name not in _NUMPY_NAMES:
            raise DtypeError(f"tensor: NumPy dtype {array.dtype} is not supported; supported: "
                             f"{', '.join(sorted(_NUMPY_NAMES))}")
        return as_dtype(array.dtype.name)
    kind = array.dtype.kind
    if kind == "b":
        return bool_
    if kind in "iu":
        return int64
    if kind == "f":
        return get_default_dtype()
    raise DtypeError(f"tensor: could not infer a dtype from data of NumPy kind {array.dtype} "
                     f"({type(data).__name__}); expected numbers or bools")


def _host_array(data):
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten(data)):
        data = _nested_items(data)
    try:
        return np.array(data)
    except ValueError as exc:
        raise ValueError(f"tensor: data is not a regular nested sequence of numbers: {exc}") from None


def _flatten(seq):
    for x in seq:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def _nested_items(seq):
    return [(_nested_items(x) if isinstance(x, (list, tuple)) else (x.item() if isinstance(x, Tensor) else x))
            for x in seq]


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, NumPy arrays or tensors)."""
    array = _host_array(data)
    dt = as_dtype(dtype) if dtype is not None else (
        data._dtype if isinstance(data, Tensor) else _infer_dtype(data, array))
    try:
        dev = registry.resolve_device(device) if device is not None else _default_device()
    except DeviceError as exc:
        raise DeviceError(f"tensor: {exc}") from None
    backend = registry.get_backend(dev.type)
    if dt not in backend.supported_dtypes(dev.index):
        raise DtypeError(f"tensor: {dev} does not support {dt.name}")
    native = backend.from_numpy(np.array(array, copy=True), dt, dev.index)
    out = wrap(native, dt, dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but returns ``data`` itself when it already is a tensor of that dtype and device."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and dtype is None and device is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``array``: writes through either show in both."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy ndarray, got {type(array).__name__}")
    dt = _infer_dtype(array, array)
    dev = registry.resolve_device("cpu")
    native = registry.get_backend("cpu").from_numpy(array, dt, None)
    return wrap(native, dt, dev)
