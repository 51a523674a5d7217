"""Small Tensor attributes and torch-level functions PyTorch programs use that the op schema does not generate:
the adjoint views (``H``, ``mH``, ``adjoint``), container protocols (``in``, ``reversed``, ``del``), facts
(``is_cpu``, ``is_meta``, ``is_inference``, ``is_distributed``, ``name``, ``dim_order``), ``as_subclass``,
``nonzero_static``, ``module_load``, ``set_``, and the functions ``rsub``, ``detach``, ``dropout_``,
``empty_permuted``, ``get_device_module`` and the warn-always switch. All are written in Ember tensor operations.
"""
from __future__ import annotations

import copyreg
import importlib
import math
from numbers import Number
from types import ModuleType

from .dispatch.binding import int_argument, size_argument, tensor_argument
from .dispatch.dtypes import as_dtype, get_default_dtype, int64
from .dispatch.errors import DtypeError, ShapeError, describe
from .dispatch.flags import FLAGS
from .dispatch.ops import F
from .memory_format import strided
from .tensor import Tensor, rehouse

# -- adjoint views ------------------------------------------------------------------------------------------


def _matrix_transpose(self: Tensor) -> Tensor:
    """``mH``: the last two dims swapped (Ember has no complex dtypes, so there is nothing to conjugate)."""
    if self.ndim < 2:
        raise ShapeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                         f"tensor ({describe(self)})")
    return F.transpose(self, -2, -1)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims, as a view (for real tensors: ``transpose(-2, -1)``)."""
    if input.ndim < 2:
        raise ShapeError(f"adjoint: tensor.adjoint() is only supported on matrices or batches of matrices. "
                         f"Got {input.ndim}-D tensor ({describe(input)})")
    return F.transpose(input, -2, -1)


def _hermitian(self: Tensor) -> Tensor:
    """``H``: the conjugate transpose of a matrix (a 0-d tensor is its own)."""
    if self.ndim == 0:
        return self
    if self.ndim != 2:
        raise ShapeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor "
                         f"({describe(self)})")
    return F.transpose(self, 0, 1)


# -- container protocols ------------------------------------------------------------------------------------

def _contains(self: Tensor, element) -> bool:
    """``element in t``: whether any element of t equals ``element`` (a number or a tensor broadcast to t)."""
    if not isinstance(element, (Tensor, Number)):
        raise TypeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                        f"{type(element)}.")
    return bool(F.any(F.eq(self, element)).item())


def _reversed(self: Tensor) -> Tensor:
    """``reversed(t)``: t flipped along its first dim (a 0-d tensor is itself)."""
    return self if self.ndim == 0 else F.flip(self, (0,))


def _delitem(self: Tensor, key) -> None:
    raise TypeError("Tensor does not support deleting items")


# -- facts --------------------------------------------------------------------------------------------------

def is_inference(input: Tensor) -> bool:
    """Whether ``input`` was made under ``ember.inference_mode`` (a view shares its base's answer)."""
    return getattr(tensor_argument("is_inference", "input", input), "_inference", False)


def is_distributed(input: Tensor) -> bool:
    """Always False, as in PyTorch: a tensor is never split across processes (DDP replicates them)."""
    tensor_argument("is_distributed", "input", input)
    return False


def dim_order(self: Tensor, *, ambiguity_check: bool | list = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory: by decreasing stride, ties kept in dim order.
    With ``ambiguity_check``, refuses a layout that more than one order describes (dims of length 1, or
    of equal stride)."""
    strides = self.stride()
    order = tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))
    if ambiguity_check is not False:
        if not isinstance(ambiguity_check, (bool, list)):
            raise TypeError(f"dim_order: ambiguity_check must be a bool or a list of memory formats, got "
                            f"{type(ambiguity_check).__name__}")
        if 1 in self.shape or len(set(strides)) != len(strides):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the "
                               f"given memory formats ({describe(self)}, strides {strides})")
    return order


# -- as_subclass, const_data_ptr, module_load --------------------------------------------------------

def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An instance of ``cls`` (a Tensor subclass) sharing this tensor's storage and staying in its graph."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of ember.Tensor, got {cls!r}")
    return rehouse(F.view(self, tuple(self.shape)), cls)


def const_data_ptr(self: Tensor) -> int:
    """``data_ptr()``, for a caller that promises only to read."""
    return self.data_ptr()


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """How ``load_state_dict`` turns the state value ``other`` into this parameter's new value: other's values
    copied into self (``assign=False``) or other itself, detached either way."""
    other = tensor_argument("module_load", "other", other, position=1)
    return other.detach() if assign else self.copy_(other).detach()


def set_(self: Tensor, source: Tensor | None = None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Make this tensor a view of ``source``'s storage (all of it, or ``size``/``stride`` from
    ``storage_offset``), so that writes through either are seen by both; no source: an empty tensor."""
    from .autograd import is_grad_enabled
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


def _array_wrap(self: Tensor, array, context=None, return_scalar: bool = False) -> Tensor:
    """A NumPy ufunc's result over tensors (``np.sin(t)``) as a CPU tensor sharing its memory; bool results
    become uint8, as in PyTorch."""
    from .creation import from_numpy
    if array.dtype == bool:
        array = array.astype("uint8")
    return from_numpy(array)


def _reduce_ex(self: Tensor, protocol: int):
    """Pickling goes through the reducer ``ember.serialization`` registers for Tensor (subclasses included)."""
    return copyreg.dispatch_table[Tensor](self)


# -- nonzero_static -----------------------------------------------------------------------------------------

def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` with exactly ``size`` rows: truncated, or padded with rows of ``fill_value``."""
    input = tensor_argument("nonzero_static", "input", input)
    size = int_argument("nonzero_static", "size", size)
    fill_value = int_argument("nonzero_static", "fill_value", fill_value)
    if size < 0:
        raise ValueError(f"nonzero_static: 'size' must be a non-negative integer, got {size}")
    found = F.nonzero(input)
    if found.shape[0] >= size:
        return found[:size]
    padding = F.full((size - found.shape[0], input.ndim), fill_value, dtype=int64, device=input.device)
    return F.cat([found, padding], 0)


# -- torch-level functions ----------------------------------------------------------------------------------

def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``: subtraction with the operands reversed."""
    return F.sub(other, tensor_argument("rsub", "input", input), alpha=alpha)


def detach(input: Tensor) -> Tensor:
    return tensor_argument("detach", "input", input).detach()


def detach_(input: Tensor) -> Tensor:
    return tensor_argument("detach_", "input", input).detach_()


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``dropout`` written into ``input``."""
    from .nn.functional import dropout
    return dropout(tensor_argument("dropout_", "input", input), p, train, inplace=True)


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


def get_device_module(device=None) -> ModuleType:
    """The module of a device type (``ember.cuda`` for ``"cuda:0"``, ``ember.cpu`` for ``"cpu"``); with no
    device, that of the current accelerator, else ``ember.cpu``."""
    from . import accelerator
    from .dispatch.device import device as Device
    if device is None:
        current = accelerator.current_accelerator()
        name = current.type if current is not None else "cpu"
    elif isinstance(device, Device):
        name = device.type
    elif isinstance(device, str):
        name = Device(device).type
    else:
        raise RuntimeError(f"get_device_module: invalid value of device '{device}', expected a ember.device, "
                           f"a str or None")
    try:
        return importlib.import_module(f"ember.{name}")
    except ModuleNotFoundError:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'ember.{name}'.") from None


def set_warn_always(b: bool, /) -> None:
    """When True, warnings Ember gives once per process (a backend falling back to the CPU, ...) are given
    every time, as PyTorch's TORCH_WARN_ONCE sites under the same switch."""
    if not isinstance(b, bool):
        raise TypeError(f"set_warn_always(): argument 'b' must be bool, not {type(b).__name__}")
    FLAGS.warn_always = b


def is_warn_always_enabled() -> bool:
    return FLAGS.warn_always


def install() -> None:
    Tensor.H = property(_hermitian)
    Tensor.mH = property(_matrix_transpose)
    Tensor.adjoint = adjoint
    Tensor.__contains__ = _contains
    Tensor.__reversed__ = _reversed
    Tensor.__delitem__ = _delitem
    Tensor.__reduce_ex__ = _reduce_ex
    Tensor.__array_wrap__ = _array_wrap
    Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
    Tensor.is_meta = property(lambda self: self.device.type == "meta")
    Tensor.name = property(lambda self: None, doc="Always None: Ember has no named tensors.")
    Tensor.is_inference = is_inference
    Tensor.is_distributed = is_distributed
    Tensor.dim_order = dim_order
    Tensor.as_subclass = as_subclass
    Tensor.const_data_ptr = const_data_ptr
    Tensor.module_load = module_load
    Tensor.nonzero_static = nonzero_static
    Tensor.set_ = set_


def export(namespace: dict) -> None:
    namespace.update(adjoint=adjoint, nonzero_static=nonzero_static, is_inference=is_inference,
                     is_distributed=is_distributed, rsub=rsub, detach=detach, detach_=detach_, dropout_=dropout_,
                     empty_permuted=empty_permuted, get_device_module=get_device_module,
                     set_warn_always=set_warn_always, is_warn_always_enabled=is_warn_always_enabled)
