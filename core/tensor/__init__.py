"""The Tensor: a native array of some backend, with its dtype and device, plus autograd state.

This module holds the class with its slots and metadata, and the constructors Ember's own code uses
(``wrap``, ``wrap_view``). Every other attribute is listed in ``surface.py``, whose ``install()`` is the only
code that adds to the class; so this module imports nothing above the dispatch layer.
"""
from __future__ import annotations

from typing import Any

from ..dispatch.execution import dispatcher, host_reads, links
from ..dispatch.contract import registry
from ..dispatch.schema.binding import int_argument
from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import dtype as DType
from ..memory_format import contiguous_format, is_contiguous_as, strided



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

    def __init__(self, *args, **kwargs):
        """Everything happens in ``__new__`` (the legacy constructor, ``creation_methods``)."""

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

    def detach(self) -> "Tensor":
        """A tensor sharing this one's storage, cut off from the autograd graph."""
        return wrap_view(self._data, self._dtype, self._device, self)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not self._dtype.is_inexact:
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients, got "
                               f"{self._dtype.name}")
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

    def _host(self):
        """A NumPy copy of the values from any device; for printing, item and tolist."""
        dispatcher.note_value_read()
        return host_reads.read(self._data, self._device)

    @property
    def layout(self):
        """``ember.strided`` for a dense tensor (sparse tensors, ``ember.sparse``, have their own layouts)."""
        return strided


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


links.register_tensor(links.TensorLink(Tensor, wrap, wrap_view))
