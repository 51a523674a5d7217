"""The Tensor: a native array of some backend, with its dtype and device, plus autograd state."""
from __future__ import annotations

from typing import Any

from .dispatch import dispatcher, links, registry
from .dispatch.binding import int_argument, tensor_argument
from .dispatch.transfer import transfer
from .dispatch.device import device as Device
from .dispatch.dtypes import as_dtype, dtype as DType, float16, float32, float64, int64
from .dispatch.errors import DeviceError, DtypeError
from .memory_format import contiguous_format, is_contiguous_as, preserve_format, strided, to_format


class Size(tuple[int, ...]):
    """``tensor.shape``: a tuple with PyTorch's ``numel``."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"


class Tensor:
    """An n-dimensional array on one device. Create with ``ember.tensor``, ``ember.zeros``, ..."""

    __slots__ = ("_data", "_dtype", "_device", "_version", "_base", "requires_grad", "grad", "grad_fn",
                 "_output_nr", "_accumulator", "_inference", "__weakref__")
    __array_priority__ = 1000  # NumPy defers to our reflected operators
    requires_grad: bool
    grad: Tensor | None
    grad_fn: Any  # the autograd node that made this tensor: None for leaves

    def __new__(cls, *args, **kwargs):
        """PyTorch's legacy constructor: ``ember.Tensor([1., 2.])``, ``ember.Tensor(2, 3)`` (uninitialized),
        ``ember.Tensor()`` (empty); see ``legacy_types``. Ember's own code builds tensors with ``wrap``."""
        from .legacy_types import construct
        return construct(None, None, "Tensor", args, kwargs)

    def __init__(self, *args, **kwargs):
        """Everything happens in ``__new__``."""

    # -- metadata ----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        if dim.__class__ is not int:
            dim = int_argument("size", "dim", dim, position=1)
        return self._data.shape[dispatcher.wrap_dim("size", dim, len(self._data.shape), self, scalar_ok=False)]

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    def dim(self) -> int:
        return len(self._data.shape)

    def numel(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def detach(self) -> "Tensor":
        """A tensor sharing this one's storage, cut off from the autograd graph."""
        return wrap_view(self._data, self._dtype, self._device, self)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError(f"only tensors of floating point dtype can require gradients, got {self._dtype.name}")
        self.requires_grad = requires_grad
        return self

    def detach_(self) -> "Tensor":
        self.grad_fn = None
        self.requires_grad = False
        return self

    def stride(self, dim: int | None = None):
        strides = self._backend().strides(self._data)
        if dim is None:
            return strides
        dim = int_argument("stride", "dim", dim, position=1)
        return strides[dispatcher.wrap_dim("stride", dim, len(strides), self, scalar_ok=False)]

    def is_contiguous(self, memory_format=contiguous_format) -> bool:
        """Row-major dense; with another ``memory_format`` (e.g. ``ember.channels_last``), dense in that order."""
        if memory_format is not contiguous_format:
            return is_contiguous_as(self, memory_format)
        expected = 1
        for size, stride in zip(reversed(self._data.shape), reversed(self.stride())):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def data_ptr_id(self) -> int:
        """An id shared by every view of one allocation (PyTorch's untyped_storage identity)."""
        return self._backend().storage_id(self._data)

    def _backend(self):
        return registry.get_backend(self._device.type)

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if not self._data.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    # -- conversions -------------------------------------------------------------------------
    def numpy(self, *, force: bool = False):
        """The values as a NumPy array; shares memory for CPU tensors, like PyTorch."""
        if self.requires_grad and not force:
            raise RuntimeError("numpy(): can't call numpy() on a tensor that requires grad; "
                               "use tensor.detach().numpy()")
        if self._device.type != "cpu" and not force:
            raise TypeError(f"numpy(): can't convert a {self._device} tensor to NumPy; use tensor.cpu() first")
        dispatcher.note_value_read()
        return self._backend().to_numpy(self._data)

    def __array__(self, dtype=None, copy: bool | None = None):
        """NumPy's array protocol: ``np.asarray(t)`` shares a cpu tensor's memory (``ember.interop``)."""
        from .interop.array_protocol import to_array
        return to_array(self, dtype, copy)

    def __dlpack__(self, *, stream: Any = -1, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None):
        """A DLPack capsule sharing this tensor's memory (``ember.interop.dlpack``)."""
        from .interop.dlpack import to_capsule
        return to_capsule(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[Any, int]:
        """Where this tensor's memory is, as DLPack's (device type, index)."""
        from .interop.dlpack import dlpack_device
        return dlpack_device(self)

    def _host(self):
        """A NumPy copy of the values from any device; for printing, item and tolist."""
        dispatcher.note_value_read()
        return self._backend().to_numpy(self._data)

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item(): a tensor with {self.numel()} elements cannot be converted to a "
                             f"Python scalar")
        value = self._host().reshape(()).item()
        if self._dtype.is_floating_point:
            return float(value)
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

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.is_floating_point or self._dtype.kind == "bool" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def to(self, *args, **kwargs) -> "Tensor":
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; ``copy=True`` forces a copy."""
        memory_format = kwargs.pop("memory_format", preserve_format)
        dev, dt, copy = _parse_to_args(self, args, kwargs)
        out = self
        if dt is not None and dt is not out._dtype:
            out = dispatcher.call(_op("to_dtype"), (out, dt), {})
        if dev is not None and dev is not out._device:
            out = _to_device(out, dev)
        if copy and out is self:
            out = self.clone()
        if memory_format is not preserve_format:
            out = to_format(out, memory_format, "to")
        return out

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device=None) -> "Tensor":
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """``type()``: PyTorch's type string ("torch.FloatTensor"); ``type(dtype_or_type)``: a conversion."""
        from .legacy_types import convert
        return convert(self, dtype, non_blocking, **kwargs)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(tensor_argument("type_as", "other", other, position=1)._dtype)

    def float(self) -> "Tensor":
        return self.to(float32)

    def double(self) -> "Tensor":
        return self.to(float64)

    def half(self) -> "Tensor":
        return self.to(float16)

    def long(self) -> "Tensor":
        return self.to(int64)

    def int(self) -> "Tensor":
        return self.to(as_dtype("int32"))

    def short(self) -> "Tensor":
        return self.to(as_dtype("int16"))

    def bool(self) -> "Tensor":
        return self.to(as_dtype("bool"))

    def bfloat16(self) -> "Tensor":
        return self.to(as_dtype("bfloat16"))

    def byte(self) -> "Tensor":
        return self.to(as_dtype("uint8"))

    def char(self) -> "Tensor":
        return self.to(as_dtype("int8"))

    def contiguous(self, memory_format=contiguous_format) -> "Tensor":
        """This tensor if it is dense in ``memory_format`` (default row-major), else a dense copy in it."""
        if memory_format is not contiguous_format:
            if memory_format is preserve_format:
                raise RuntimeError("contiguous: preserve memory format is unsupported by the contiguous operator")
            return to_format(self, memory_format)
        return self if self.is_contiguous() else self.clone()

    @property
    def layout(self):
        """``ember.strided``: every Ember tensor is dense and strided."""
        return strided

    def get_device(self) -> int:
        """The device index, -1 for the CPU (as PyTorch)."""
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def __repr__(self) -> str:
        from .printing import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its Python number (``f"{loss:.4f}"``); others only with an empty spec."""
        if self._data.shape == ():
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    def __deepcopy__(self, memo):
        out = self.clone().detach() if hasattr(self, "detach") else self.clone()
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        return out


_new = object.__new__


def rehouse(source: Tensor, cls: type) -> Tensor:
    """A new instance of ``cls`` (Tensor or a subclass) holding every field of ``source``: the same storage,
    version counter, graph position and flags."""
    out = _new(cls)
    for field in Tensor.__slots__:
        if field != "__weakref__":
            setattr(out, field, getattr(source, field))
    return out


def wrap(native, dt: DType, dev: Device) -> Tensor:
    """A fresh tensor around a native array the caller owns exclusively."""
    t = _new(Tensor)
    t._data = native
    t._dtype = dt
    t._device = dev
    t._version = [0]
    t._base = None
    t.requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._accumulator = None
    t._inference = links.recorder.state.inference  # made under ember.inference_mode: an inference tensor
    return t


def wrap_view(native, dt: DType, dev: Device, base: Tensor) -> Tensor:
    """A tensor that shares ``base``'s storage and version counter."""
    t = _new(Tensor)  # wrap's fields, spelled out: views are made on every indexing expression
    t._data = native
    t._dtype = dt
    t._device = dev
    t._version = base._version
    t._base = base if base._base is None else base._base
    t.requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._accumulator = None
    t._inference = base._inference
    return t


def _op(name: str):
    from .dispatch.schema import OPS
    return OPS[name]


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


links.register_tensor(links.TensorLink(Tensor, wrap, wrap_view))
