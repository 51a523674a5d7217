"""Conversions: to other devices and dtypes (``to``, ``cpu``, ``float``, ``type``, ...), to Python numbers
and lists, and to NumPy and DLPack."""
from __future__ import annotations

import warnings
from typing import Any

from .. import accelerator
from ..dispatch.execution import dispatcher, host_reads, links
from ..dispatch.execution.caller import caller_stacklevel
from ..dispatch.contract import registry
from ..dispatch.schema.binding import tensor_argument
from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import as_dtype
from ..dispatch.schema.errors import ArgumentError, DeviceError, DtypeError
from ..dispatch.ops import F
from ..dispatch.schema import OPS
from ..dispatch.execution.transfer import transfer
from ..interop.array_protocol import to_array
from ..interop.dlpack import dlpack_device, to_capsule
from ..legacy_types import convert, type_string
from ..memory_format import contiguous_format, preserve_format, to_format
from . import Tensor, wrap


def numpy(self, *, force: bool = False):
    """The values as a NumPy array; shares memory for CPU tensors, like PyTorch."""
    if self.requires_grad and not force:
        raise RuntimeError("numpy(): can't call numpy() on a tensor that requires grad; "
                           "use tensor.detach().numpy()")
    if self._device.type != "cpu" and not force:
        raise TypeError(f"numpy(): can't convert a {self._device} tensor to NumPy; use tensor.cpu() first")
    dispatcher.note_value_read()
    return host_reads.read(self._data, self._device)


def __array__(self, dtype=None, copy: bool | None = None):
    """NumPy's array protocol: ``np.asarray(t)`` shares a cpu tensor's memory (``ember.interop``)."""
    return to_array(self, dtype, copy)


def __dlpack__(self, *, stream: Any = -1, max_version: tuple[int, int] | None = None,
               dl_device: tuple[int, int] | None = None, copy: bool | None = None):
    """A DLPack capsule sharing this tensor's memory (``ember.interop.dlpack``)."""
    return to_capsule(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def __dlpack_device__(self) -> tuple[Any, int]:
    """Where this tensor's memory is, as DLPack's (device type, index)."""
    return dlpack_device(self)


def item(self):
    if self.numel() != 1:
        raise ArgumentError(f"item(): a tensor with {self.numel()} elements cannot be converted to a "
                            f"Python scalar")
    value = self._host().reshape(()).item()
    if self._dtype.is_floating_point:
        return float(value)
    if self._dtype.is_complex:
        return complex(value)
    return bool(value) if self._dtype.kind == "bool" else int(value)


def tolist(self):
    host = self._host()
    if self._dtype.is_floating_point and host.dtype.itemsize == 2:
        host = host.astype("float32")
    return host.tolist()


def __bool__(self) -> bool:
    if self.numel() != 1:
        raise RuntimeError(f"bool value of a tensor with {self.numel()} elements is ambiguous")
    return bool(self.item())


def _real_value(self, type_name: str):
    """The value of a one-element tensor as a real number: a complex one only where it has no imaginary part
    (PyTorch's check and message, with the C++ type it converts to)."""
    value = self.item()
    if isinstance(value, complex):
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {type_name} without overflow "
                               f"(the value {value} has a nonzero imaginary part)")
        return value.real
    return value


def __float__(self) -> float:
    return float(_real_value(self, "double"))


def __int__(self) -> int:
    return int(_real_value(self, "int64_t"))


def __complex__(self) -> complex:
    return complex(self.item())


def __index__(self) -> int:
    if self._dtype.kind not in ("int", "bool") or self.numel() != 1:  # a bool is an int, as in Python and PyTorch
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self.item())


def to(self, *args, **kwargs) -> Tensor:
    """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; ``copy=True`` forces a copy."""
    memory_format = kwargs.pop("memory_format", None) or preserve_format  # None: the default, as in PyTorch
    dev, dt, copy = _parse_to_args(self, args, kwargs)
    out = self
    if dt is not None and dt is not out._dtype:
        if out._dtype.is_complex and not dt.is_complex:
            _warn_imaginary_discarded()
        out = dispatcher.call(OPS["to_dtype"], (out, dt), {})
    if dev is not None and dev is not out._device:
        out = _to_device(out, dev)
    if copy and out is self:
        out = self.clone()
    if memory_format is not preserve_format:
        out = to_format(out, memory_format, "to")
    return out


_imaginary_warned = [False]


def _warn_imaginary_discarded() -> None:
    """PyTorch's warning, once per process as its TORCH_WARN_ONCE: a complex-to-real conversion keeps real parts."""
    if not _imaginary_warned[0]:
        _imaginary_warned[0] = True
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=caller_stacklevel())


def cpu(self) -> Tensor:
    return self.to("cpu")


def cuda(self, device=None) -> Tensor:
    return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))


def legacy_type(self, dtype=None, non_blocking: bool = False, **kwargs):
    """``type()``: PyTorch's type string ("torch.FloatTensor"); ``type(dtype_or_type)``: a conversion."""
    return convert(self, dtype, non_blocking, **kwargs)


def type_as(self, other: Tensor) -> Tensor:
    return self.to(tensor_argument("type_as", "other", other, position=1)._dtype)


def _to_dtype_method(name: str, dt):
    def method(self) -> Tensor:
        return self.to(dt)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"This tensor as {dt.name} (itself if it already is)."
    return method


#: ``x.float()``, ``x.long()``, ...: PyTorch's conversions to one dtype each.
DTYPE_METHODS = {name: _to_dtype_method(name, as_dtype(dtype_name)) for name, dtype_name in (
    ("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"), ("long", "int64"),
    ("int", "int32"), ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool"),
    ("cfloat", "complex64"), ("cdouble", "complex128"))}


def contiguous(self, memory_format=contiguous_format) -> Tensor:
    """This tensor if it is dense in ``memory_format`` (default row-major), else a dense copy in it."""
    if memory_format is not contiguous_format:
        if memory_format is preserve_format:
            raise RuntimeError("contiguous: preserve memory format is unsupported by the contiguous operator")
        return to_format(self, memory_format)
    return self if self.is_contiguous() else self.clone()


def pin_memory(self, device=None) -> Tensor:
    """A copy in host memory ready for transfers. As PyTorch does, it needs an accelerator and a CPU tensor.

    Ember's backends copy from any host memory, so the copy is ordinary memory (``is_pinned()`` stays False).
    """
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{type_string(self)}' only dense CPU tensors can be pinned")
    if not accelerator.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return F.clone(self)


def _parse_to_args(t: Tensor, args, kwargs):
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a._device, a._dtype
        elif isinstance(a, (str, Device)):
            dev = a
        elif a is None:
            continue
        else:
            try:
                dt = as_dtype(a)
            except TypeError:
                raise TypeError(f"to(): expected a device, dtype or tensor, got {a!r}") from None
    if dev is not None:
        try:
            dev = registry.resolve_device(dev)
        except DeviceError as exc:
            raise DeviceError(f"to: {exc}") from None
    if dt is not None:
        dt = as_dtype(dt)
    return dev, dt, copy


def _to_device(t: Tensor, dev: Device) -> Tensor:
    backend = registry.get_backend(dev.type)
    if t._dtype not in backend.supported_dtypes(dev.index):
        raise DtypeError(f"to: {dev} does not support {t._dtype.name} (tensor of shape {tuple(t.shape)} on "
                         f"{t._device})")
    out = wrap(transfer(t._data, t._dtype, t._device, dev), t._dtype, dev)
    if t.requires_grad:
        links.recorder.record_transfer(t, out)
    for hook in dispatcher.value_read_hooks:
        hook(f"a device transfer ({t._device} to {dev})")
    return out
