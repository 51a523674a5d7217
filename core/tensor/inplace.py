"""In-place writes: ``write_result`` (the last step of an in-place op that runs out of place and copies: see
``ember.dispatch.execution.inplace`` for the one-kernel road), ``copy_``/``fill_``/``zero_``, ``set_``,
``module_load``, and in-place changes of a tensor's shape: ``transpose_``, ``t_``, ``squeeze_``, ``unsqueeze_``,
``swapaxes_``, ``as_strided_`` (the same elements seen through another view), ``resize_``/``resize_as_`` (new
storage), and the deprecated out-of-place ``resize``/``resize_as``.

The view is computed by the out-of-place op and the tensor then takes it over. For autograd the op runs on a
stand-in sharing this tensor's history, so the recorded node keeps the tensor as it was, and the tensor
continues from that node (PyTorch's history rewrite for in-place views).
"""
from __future__ import annotations

import math
import warnings

from ..autograd.grad_mode import is_grad_enabled
from ..dispatch.schema.binding import size_argument, tensor_argument
from ..dispatch.schema.dtypes import float64
from ..dispatch.schema.errors import DtypeError, ShapeError, describe
from ..dispatch.execution.inplace import make_inplace
from ..dispatch.ops import F
from ..dispatch.schema import OPS
from ..dispatch.schema.promotion import can_cast
from ..memory_format import contiguous_format
from . import Tensor, wrap_view


def write_result(target: Tensor, result: Tensor, op_name: str) -> Tensor:
    """Copy an out-of-place result into ``target``, as every in-place op does: same shape, castable dtype."""
    if not can_cast(result._dtype, target._dtype):
        raise DtypeError(f"{op_name}_: result type {result._dtype.name} can't be cast to the desired output type "
                         f"{target._dtype.name} (tensor of shape {tuple(target.shape)} on {target._device})")
    if tuple(result._data.shape) != tuple(target._data.shape):
        raise ShapeError(f"{op_name}_: output with shape {tuple(target.shape)} doesn't match the broadcast shape "
                         f"{tuple(result.shape)}")
    return _copy_into(target, result)


def _copy_into(target: Tensor, source: Tensor) -> Tensor:
    """``target.copy_(source)`` for tensors on one device."""
    return F.copy_(target, source)


_float_power_into = make_inplace(OPS["float_power"], write_result)


def float_power_(self, exponent):
    """PyTorch computes float_power in float64, so only a float64 tensor can take its result in place."""
    if self._dtype is not float64:
        raise DtypeError(f"float_power_: the base given to float_power_ has dtype {self._dtype.name} but the "
                         f"operation's result requires dtype float64 (tensor of shape {tuple(self.shape)} on "
                         f"{self._device})")
    return _float_power_into(self, exponent)


def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = F.full((), src, dtype=self._dtype, device=self._device)
    elif src._device is not self._device:
        src = src.to(self._device)
    return _copy_into(self, src)


def fill_(self, value):
    return F.copy_(self, F.full((), value, dtype=self._dtype, device=self._device))


def zero_(self):
    return fill_(self, 0)


def random_(self, *args, generator=None, **kwargs):
    """``random_()``, ``random_(to)`` or ``random_(from, to)``: a lone positional argument is ``to``."""
    if len(args) == 1 and not kwargs:
        return F.random_(self, 0, args[0], generator=generator)
    return F.random_(self, *args, generator=generator, **kwargs)


def set_(self: Tensor, source: Tensor | None = None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Make this tensor a view of ``source``'s storage (all of it, or ``size``/``stride`` from
    ``storage_offset``), so that writes through either are seen by both; no source: an empty tensor."""
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("set_: a leaf Variable that requires grad is being used in an in-place operation.")
    if source is None:
        if size is not None:
            raise TypeError("set_: size needs a source tensor")
        target = F.empty((0,), dtype=self.dtype, device=self.device)
    else:
        if not isinstance(source, Tensor):
            raise TypeError(f"set_(): argument 'source' must be Tensor, not {type(source).__name__} (Ember has no "
                            f"storage objects apart from tensors)")
        if source.dtype is not self.dtype:
            raise DtypeError(f"set_: could not set a tensor of dtype {self.dtype.name} to a tensor of dtype "
                             f"{source.dtype.name} ({describe(source)})")
        if is_grad_enabled() and (self.requires_grad or source.requires_grad):
            raise RuntimeError(f"set_: Ember does not record set_ in the autograd graph; call it under "
                               f"ember.no_grad() or on detached tensors ({describe(self)}, source {describe(source)})")
        target = source
        if size is not None:
            size = size_argument("set_", "size", size)
            stride = size_argument("set_", "stride", stride) if stride is not None else \
                tuple(int(math.prod(size[d + 1:])) for d in range(len(size)))
            target = F.as_strided(source, size, stride, storage_offset)
    self._data, self._dtype, self._device = target._data, target._dtype, target._device
    self._version = target._version
    self._base = target if target._base is None else target._base
    self._version[0] += 1
    return self


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """How ``load_state_dict`` turns the state value ``other`` into this parameter's new value: other's values
    copied into self (``assign=False``) or other itself, detached either way."""
    other = tensor_argument("module_load", "other", other, position=1)
    return other.detach() if assign else self.copy_(other).detach()


def _stand_in(self: Tensor) -> Tensor:
    """Another tensor object for the same elements and the same place in the graph."""
    twin = wrap_view(self._data, self._dtype, self._device, self)
    twin.requires_grad, twin.grad_fn, twin._output_nr = self.requires_grad, self.grad_fn, self._output_nr
    twin._accumulator = self._accumulator
    return twin


def _take_over(self: Tensor, view, name: str) -> Tensor:
    """``self`` becomes ``view(stand-in of self)``: its elements, shape and (when recorded) history."""
    if self.requires_grad and self.grad_fn is None and is_grad_enabled():
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation.")
    out = view(_stand_in(self) if self.requires_grad else self)
    self._data = out._data
    if out.grad_fn is not None:
        self.grad_fn, self._output_nr = out.grad_fn, out._output_nr
    return self


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return _take_over(self, lambda x: F.transpose(x, dim0, dim1), "transpose_")


def t_(self: Tensor) -> Tensor:
    return _take_over(self, F.t, "t_")


def squeeze_(self: Tensor, dim=None) -> Tensor:
    return _take_over(self, lambda x: F.squeeze(x, dim), "squeeze_")


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return _take_over(self, lambda x: F.unsqueeze(x, dim), "unsqueeze_")


def as_strided_(self: Tensor, size, stride, storage_offset=None) -> Tensor:
    """This tensor becomes its as_strided view (of its base's storage, for a view). Refused on a tensor that
    requires grad: its recorded history would read the tensor's new shape."""
    if self.requires_grad and is_grad_enabled():
        raise RuntimeError("as_strided_: not supported on a tensor that requires grad; use as_strided")
    return _take_over(self, lambda x: F.as_strided(x, size, stride, storage_offset), "as_strided_")


def resize_(self: Tensor, *sizes, size=None, memory_format=contiguous_format) -> Tensor:
    """This tensor with shape ``sizes`` (or ``size=``): its elements kept in row-major order, cut or extended
    with uninitialized values. A tensor that requires grad cannot be resized (PyTorch's rule)."""
    if size is not None:
        if sizes:
            raise TypeError("resize_() got multiple values for argument 'size'")
        sizes = (size,)
    size = size_argument("resize_", "size", sizes[0] if len(sizes) == 1 else sizes)
    if self.requires_grad:
        raise RuntimeError("resize_: cannot resize variables that require grad")
    count, have = 1, self.numel()
    for s in size:
        count *= s
    flat = F.reshape(self, (-1,))
    if count <= have:
        resized = F.clone(F.slice(flat, 0, 0, count))
    else:
        resized = F.cat([flat, F.empty((count - have,), dtype=self.dtype, device=self.device)])
    self._data = F.reshape(resized, size)._data
    self._version[0] += 1
    return self


def resize_as_(self: Tensor, the_template: Tensor, memory_format=contiguous_format) -> Tensor:
    """This tensor resized to ``the_template``'s shape (PyTorch's name for the argument)."""
    return resize_(self, tuple(tensor_argument("resize_as_", "the_template", the_template, position=1).shape))


def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    """transpose_ under NumPy's names."""
    return transpose_(self, axis0, axis1)


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated in PyTorch: this tensor's elements with shape ``sizes`` (a view where the strides allow)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    size = size_argument("resize", "size", sizes[0] if len(sizes) == 1 else sizes)
    if math.prod(size) != self.numel():
        raise ShapeError(f"resize: size {size} has {math.prod(size)} elements, the tensor of shape "
                         f"{tuple(self.shape)} has {self.numel()}; resize_ changes the element count")
    return F.reshape(self, size)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated in PyTorch: resize(tensor.size())."""
    return resize(self, tuple(tensor_argument("resize_as", "tensor", tensor, position=1).shape))
