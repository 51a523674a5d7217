"""Tensors from Python data, NumPy arrays and buffers (``ember.tensor``, ``from_numpy``, ``as_tensor``,
``asarray``, ``frombuffer``), from layouts (``empty_strided``, ``empty_permuted``), and ``atleast_1d/2d/3d``'s
several-tensor forms."""
from __future__ import annotations

import math

import numpy as np

from .dispatch.contract import registry
from .dispatch.schema.defaults import get_default_device
from .dispatch.schema.binding import size_argument
from .dispatch.schema.dtypes import (ALL_DTYPES, as_dtype, bfloat16, bool_, get_default_complex_dtype,
                                     get_default_dtype, int64)
from .dispatch.schema.errors import ArgumentError, DeviceError, DtypeError, NumberOverflowError, ShapeError
from .dispatch.ops import F
from .memory_format import strided
from .dispatch.schema.overflow import check_fits
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
    if kind == "c":
        return get_default_complex_dtype()
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
        raise ArgumentError(f"tensor: data is not a regular nested sequence of numbers: {exc}") from None


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
    if kind == "c" and requested is not None and requested.kind in ("int", "float"):
        raise TypeError(f"tensor(): must be real number, not complex (data of {array.size} value(s) for dtype "
                        f"{requested.name})")
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
        if not isinstance(x, (bool, int, float, complex, np.number, np.bool_, Tensor)):
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


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None, requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor: shared with it where dtype and device allow (a tensor or a CPU NumPy array),
    copied when ``copy=True``; ``copy=False`` refuses to copy."""
    if copy:
        out = tensor(obj, dtype=dtype, device=device)
    else:
        out = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and not _shares(obj, out):
            raise ArgumentError(f"asarray: copy=False, but obj ({type(obj).__name__}) cannot be used without a copy "
                                f"as a tensor of dtype {dtype} on device {device}")
    return out.requires_grad_() if requires_grad else out


def _shares(obj, out: Tensor) -> bool:
    if isinstance(obj, Tensor):
        return obj.data_ptr_id() == out.data_ptr_id()
    return isinstance(obj, np.ndarray) and out.device.type == "cpu" and np.shares_memory(obj, out.numpy())


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor over the bytes of an object exposing the buffer protocol, sharing its memory
    (bfloat16, which NumPy lacks, is read into a copy)."""
    dt = as_dtype(dtype)
    view = memoryview(buffer).cast("B")
    available = len(view) - offset
    if offset < 0 or available < 0 or (count == -1 and available % dt.itemsize):
        raise ArgumentError(f"frombuffer: buffer length {len(view)} after offset {offset} must be a positive "
                            f"multiple of the element size {dt.itemsize} ({dt.name})")
    if count == 0 or (count == -1 and available == 0):
        raise ArgumentError(f"frombuffer: both buffer length ({len(view)}) and count ({count}) must not be 0")
    if count > 0 and count * dt.itemsize > available:
        raise ArgumentError(f"frombuffer: requested buffer length ({count} * {dt.itemsize} bytes) after offset "
                            f"{offset} must not be greater than the buffer length {len(view)}")
    if dt is bfloat16:
        bits = np.frombuffer(buffer, np.uint16, count, offset).astype(np.uint32) << 16
        out = tensor(bits.view(np.float32), dtype=bfloat16, device="cpu")
    else:
        out = from_numpy(np.frombuffer(buffer, np.dtype(dt.name), count, offset))
    return out.requires_grad_() if requires_grad else out


def _dense_order(size: tuple, stride: tuple) -> list | None:
    """The dims from outermost to innermost if ``stride`` lays ``size`` out densely (a permutation of
    row-major strides, any stride for a dim of length 1), else None."""
    order = sorted(range(len(size)), key=lambda d: (-stride[d], d))
    expected = 1
    for d in reversed(order):
        if size[d] != 1 and stride[d] != expected:
            return None
        expected *= size[d]
    return order


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """Uninitialized memory of shape ``size`` laid out with ``stride``. Ember allocates dense storage, so the
    strides must describe a dense layout (any order of the dims); gaps or overlaps are refused."""
    size, stride = size_argument("empty_strided", "size", size), size_argument("empty_strided", "stride", stride)
    if len(size) != len(stride):
        raise ShapeError(f"empty_strided: mismatch in length of strides and shape: size {size}, stride {stride}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise ShapeError(f"empty_strided: sizes and strides must be non-negative, got size {size}, stride {stride}")
    order = _dense_order(size, stride) if math.prod(size) else list(range(len(size)))
    if order is None:
        raise ShapeError(f"empty_strided: strides {stride} do not lay out shape {size} densely; Ember allocates "
                         f"dense storage only (strides of a row-major layout of the dims in some order)")
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    if layout is not None and layout is not strided:
        raise DtypeError(f"empty_strided: only the strided layout is supported, got {layout}")
    storage = F.empty(tuple(size[d] for d in order), dtype=dt, device=device)
    out = F.permute(storage, tuple(order.index(d) for d in range(len(size))))
    return out.requires_grad_() if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """Uninitialized memory of shape ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is channels-last."""
    size = size_argument("empty_permuted", "size", size)
    physical_layout = size_argument("empty_permuted", "physical_layout", physical_layout)
    if sorted(physical_layout) != list(range(len(size))):
        raise ShapeError(f"empty_permuted: physical_layout {list(physical_layout)} must be a permutation of the "
                         f"{len(size)} dims of size {list(size)}")
    if layout is not None and layout is not strided:
        raise DtypeError(f"empty_permuted: only the strided layout is supported, got {layout}")
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    storage = F.empty(tuple(size[d] for d in physical_layout), dtype=dt, device=device)
    out = F.permute(storage, tuple(physical_layout.index(d) for d in range(len(size))))
    return out.requires_grad_() if requires_grad else out


def _at_least(ndim: int):
    op = getattr(F, f"atleast_{ndim}d")

    def function(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(op(t) for t in tensors[0])
        if len(tensors) == 1:
            return op(tensors[0])
        return tuple(op(t) for t in tensors)
    function.__name__ = function.__qualname__ = f"atleast_{ndim}d"
    function.__doc__ = f"atleast_{ndim}d(*tensors): each tensor viewed with at least {ndim} dims; one tensor " \
                       f"gives a tensor, several (or a sequence) a tuple"
    return function


atleast_1d, atleast_2d, atleast_3d = _at_least(1), _at_least(2), _at_least(3)
