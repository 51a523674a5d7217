"""In-place changes of a tensor's shape: ``transpose_``, ``t_``, ``squeeze_``, ``unsqueeze_``, ``swapaxes_``,
``swapdims_``, ``as_strided_`` (the same elements seen through another view), ``resize_``/``resize_as_`` (new
storage), and the deprecated out-of-place ``resize``/``resize_as``.

The view is computed by the out-of-place op and the tensor then takes it over. For autograd the op runs on a
stand-in sharing this tensor's history, so the recorded node keeps the tensor as it was, and the tensor
continues from that node (PyTorch's history rewrite for in-place views).
"""
from __future__ import annotations

import math
import warnings

from .aliases import inplace_function
from .autograd import is_grad_enabled
from .dispatch.binding import size_argument, tensor_argument
from .dispatch.errors import ShapeError
from .dispatch.ops import F
from .memory_format import contiguous_format
from .tensor import Tensor, wrap_view


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


def resize_(self: Tensor, *sizes, memory_format=contiguous_format) -> Tensor:
    """This tensor with shape ``sizes``: its elements kept in row-major order, cut or extended with
    uninitialized values. A tensor that requires grad cannot be resized (PyTorch's rule)."""
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


def resize_as_(self: Tensor, tensor: Tensor, memory_format=contiguous_format) -> Tensor:
    return resize_(self, tuple(tensor_argument("resize_as_", "tensor", tensor, position=1).shape))


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


def install() -> None:
    Tensor.transpose_ = transpose_
    Tensor.swapdims_ = transpose_
    Tensor.swapaxes_ = swapaxes_
    Tensor.t_ = t_
    Tensor.squeeze_ = squeeze_
    Tensor.unsqueeze_ = unsqueeze_
    Tensor.resize_ = resize_
    Tensor.resize_as_ = resize_as_
    Tensor.as_strided_ = as_strided_
    Tensor.resize = resize
    Tensor.resize_as = resize_as


def export(namespace: dict) -> None:
    """torch.resize_as_ and torch.as_strided_: the in-place methods as torch-level functions."""
    for name in ("resize_as_", "as_strided_"):
        namespace[name] = inplace_function(name)
