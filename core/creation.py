"""Tensors from Python data and NumPy arrays: ``ember.tensor``, ``from_numpy``, ``as_tensor``."""
from __future__ import annotations

import numpy as np

from .dispatch import registry
from .dispatch.defaults import get_default_device
from .dispatch.dtypes import ALL_DTYPES, as_dtype, bool_, get_default_dtype, int64
from .dispatch.errors import DeviceError, DtypeError, NumberOverflowError
from .dispatch.overflow import check_fits
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


def _python_numbers(data, array: np.ndarray, requested) -> np.ndarray:
    """NumPy's reading of Python numbers ``data``, checked as PyTorch reads them: without a float among them,
    an int beyond int64 is an overflow (NumPy would make a uint64, float64 or object array of it); with one,
    every number becomes a float. An integer ``dtype=`` must hold every value."""
    kind = array.dtype.kind
    beyond_int64 = kind in "uO" or (kind == "f" and array.size > 0 and np.abs(array).max() >= 2 ** 63)
    integral = requested is not None and requested.kind == "int"
    if beyond_int64 and (requested is None or integral):
        numbers = list(_flatten(data)) if isinstance(data, (list, tuple)) else [data]
        floating = requested is None and any(isinstance(x, float) for x in numbers)
        for x in numbers:
            if isinstance(x, int) and not floating:
                check_fits("tensor", x, requested or int64)
    elif integral and kind in "iuf" and array.size:
        for x in (array.min().item(), array.max().item()):
            check_fits("tensor", x, requested)
    if kind == "O" and (requested is None or requested.is_floating_point):
        try:  # ints too large for int64 among floats: NumPy left them as objects
            return np.array(data, dtype=np.float64)
        except OverflowError:
            raise NumberOverflowError(f"tensor: an int in the data is too large for float64 ({type(data).__name__} "
                                      f"of {array.size} values)") from None
    return array


def _require_numbers(data, array: np.ndarray) -> None:
    """With ``dtype=`` given no dtype is inferred, so a value that is no number (None, a string, any object)
    is caught here, as PyTorch does, before NumPy would make it NaN or fail inside a conversion."""
    if array.dtype.kind not in "OSU":
        return
    for x in _flatten(data) if isinstance(data, (list, tuple)) else [data]:
        if not isinstance(x, (bool, int, float, np.number, np.bool_, Tensor)):
            raise TypeError(f"tensor(): must be real number, not {type(x).__name__}")


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, NumPy arrays or tensors)."""
    array = _host_array(data)
    if dtype is not None:
        _require_numbers(data, array)
    if not isinstance(data, (Tensor, np.ndarray, np.generic)):
        array = _python_numbers(data, array, as_dtype(dtype) if dtype is not None else None)
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


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``ndarray``: writes through either show in both."""
    array = ndarray
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy ndarray, got {type(array).__name__}")
    dt = _infer_dtype(array, array)
    dev = registry.resolve_device("cpu")
    native = registry.get_backend("cpu").from_numpy(array, dt, None)
    return wrap(native, dt, dev)
