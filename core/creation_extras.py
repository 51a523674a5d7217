"""PyTorch's creation functions that take host data or layouts rather than sizes: ``asarray``, ``frombuffer``,
``empty_strided`` (and ``Tensor.new_empty_strided``), and the several-tensor forms of ``atleast_1d/2d/3d``.
"""
from __future__ import annotations

import math

import numpy as np

from .creation import as_tensor, from_numpy, tensor
from .dispatch.binding import size_argument
from .dispatch.dtypes import as_dtype, bfloat16, get_default_dtype
from .dispatch.errors import DtypeError, ShapeError
from .dispatch.ops import F
from .memory_format import strided
from .tensor import Tensor


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None, requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor: shared with it where dtype and device allow (a tensor or a CPU NumPy array),
    copied when ``copy=True``; ``copy=False`` refuses to copy."""
    if copy:
        out = tensor(obj, dtype=dtype, device=device)
    else:
        out = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and not _shares(obj, out):
            raise ValueError(f"asarray: copy=False, but obj ({type(obj).__name__}) cannot be used without a copy "
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
        raise ValueError(f"frombuffer: buffer length {len(view)} after offset {offset} must be a positive "
                         f"multiple of the element size {dt.itemsize} ({dt.name})")
    if count == 0 or (count == -1 and available == 0):
        raise ValueError(f"frombuffer: both buffer length ({len(view)}) and count ({count}) must not be 0")
    if count > 0 and count * dt.itemsize > available:
        raise ValueError(f"frombuffer: requested buffer length ({count} * {dt.itemsize} bytes) after offset "
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


def new_empty_strided(self: Tensor, size, stride, dtype=None, device=None, requires_grad: bool = False,
                      layout=strided, pin_memory: bool = False) -> Tensor:
    return empty_strided(size, stride, dtype=dtype or self.dtype, layout=layout, device=device or self.device,
                         requires_grad=requires_grad)


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


def install() -> None:
    Tensor.new_empty_strided = new_empty_strided


def export(namespace: dict) -> None:
    namespace.update(asarray=asarray, frombuffer=frombuffer, empty_strided=empty_strided,
                     atleast_1d=_at_least(1), atleast_2d=_at_least(2), atleast_3d=_at_least(3))
