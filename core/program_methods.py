"""Tensor methods PyTorch programs reach for that the op schema does not generate.

``narrow`` (a view through ``slice``), ``new_zeros``/``new_ones``/``new_full``/``new_empty``/
``new_tensor`` (creation with this tensor's dtype and device), ``clip``/``clip_`` (clamp's names),
memory facts (``data_ptr``, ``storage_offset``, ``nbytes``, ``itemsize``, ``pin_memory``,
``is_pinned``) and the CPU-only Python-callable maps ``apply_``, ``map_`` and ``map2_``.
"""
from __future__ import annotations

import builtins

from .dispatch.binding import int_argument, tensor_argument
from .dispatch.errors import DeviceError
from .dispatch.ops import F
from .tensor import Tensor

# -- narrow -----------------------------------------------------------------------------------------


def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """The view of ``input`` holding ``length`` entries of ``dim`` from ``start`` (negative: from the end)."""
    dim = int_argument("narrow", "dim", dim, position=1)
    start = int_argument("narrow", "start", start, position=2)  # a 0-d integer tensor too, as in PyTorch
    length = int_argument("narrow", "length", length, position=3)
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"narrow: dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got {dim})")
    dim %= input.ndim
    size = input.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"narrow: start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative, got {length}.")
    start %= size if size else 1
    if start + length > size:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}) "
                           f"of dim {dim} (tensor of shape {tuple(input.shape)}).")
    return F.slice(input, dim, start, start + length)


# -- new_* ------------------------------------------------------------------------------------------

def _sizes(args) -> tuple:
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else tuple(args)


def _options(self: Tensor, dtype, device) -> dict:
    return {"dtype": self.dtype if dtype is None else dtype, "device": self.device if device is None else device}


def _accept_layout_only(name: str, kwargs: dict) -> None:
    """PyTorch's ``layout=``/``pin_memory=`` are accepted and ignored (strided, unpinned memory only)."""
    unexpected = sorted(set(kwargs) - {"layout", "pin_memory"})
    if unexpected:
        raise TypeError(f"{name}: unexpected keyword argument(s) {unexpected}")


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def _creator(make):
    def method(self, *size, dtype=None, device=None, requires_grad: bool = False, **kwargs):
        size = kwargs.pop("size", None) if not size and "size" in kwargs else _sizes(size)
        _accept_layout_only(f"new_{make.__name__}", kwargs)
        return _finish(make(tuple(size), **_options(self, dtype, device)), requires_grad)
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device by default."""
    _accept_layout_only("new_full", kwargs)
    if not isinstance(size, (list, tuple)):  # the entries are checked by full's binding
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    out = F.full(tuple(size), fill_value, **_options(self, dtype, device))
    return _finish(out, requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A copy of ``data`` as a new leaf tensor, with this tensor's dtype and device by default."""
    from .creation import tensor
    _accept_layout_only("new_tensor", kwargs)
    if isinstance(data, Tensor):
        data = data.detach()
    out = tensor(data, **_options(self, dtype, device))
    return _finish(out, requires_grad)


# -- memory -----------------------------------------------------------------------------------------

def _address(native) -> int | None:
    """The address of a native array's first element, through the array-interface protocols."""
    for protocol in ("__array_interface__", "__cuda_array_interface__"):
        interface = getattr(native, protocol, None)
        if interface is not None:
            return interface["data"][0]
    return None


def data_ptr(self) -> int:
    """The address of the first element (views of one storage differ by their offset)."""
    address = _address(self._data)
    if address is None:
        raise DeviceError(f"data_ptr: {self.device} tensors expose no memory address (the {self.device.type} "
                          f"backend's arrays implement neither __array_interface__ nor __cuda_array_interface__)")
    return address


def storage_offset(self) -> int:
    """How many elements into its storage (the tensor it is a view of) this tensor starts."""
    base = self._base
    if base is None:
        return 0
    if _address(self._data) is None:
        raise DeviceError(f"storage_offset: {self.device} views expose no memory address to measure the offset by")
    return (data_ptr(self) - data_ptr(base)) // self.dtype.itemsize


def pin_memory(self, device=None) -> Tensor:
    """A copy in host memory ready for transfers. As PyTorch does, it needs an accelerator and a CPU tensor.

    Ember's backends copy from any host memory, so the copy is ordinary memory (``is_pinned()`` stays False).
    """
    from . import accelerator
    from .legacy_types import type_string
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{type_string(self)}' only dense CPU tensors can be pinned")
    if not accelerator.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return F.clone(self)


def is_pinned(self, device=None) -> bool:
    """Ember never allocates page-locked host memory."""
    return False


# -- Python callables over elements (CPU only, as in PyTorch) ---------------------------------------

def _require_cpu(self, name: str) -> None:
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def _store(self, results: list, name: str) -> Tensor:
    from .creation import tensor
    try:
        values = tensor(results, dtype=self.dtype, device=self.device)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: the callable's results can't be stored in a {self.dtype.name} tensor: "
                        f"{exc}") from None
    return self.copy_(F.reshape(values, tuple(self.shape)))


def _require_callable(name: str, value) -> None:
    if not builtins.callable(value):  # the parameter is named ``callable``, as in PyTorch
        raise TypeError(f"{name}(): argument 'callable' must be callable, not {type(value).__name__}")


def apply_(self, callable) -> Tensor:
    """Replace each element ``x`` by ``callable(x)`` (a Python number in, one out), in place."""
    _require_cpu(self, "apply_")
    _require_callable("apply_", callable)
    return _store(self, [callable(x) for x in F.reshape(self, (-1,)).tolist()], "apply_")


def map_(self, tensor: Tensor, callable) -> Tensor:
    """Replace each element ``x`` by ``callable(x, y)``, ``y`` from ``tensor`` broadcast to this shape."""
    return _map(self, "map_", (("other", tensor),), callable)


def map2_(self, x: Tensor, y: Tensor, callable) -> Tensor:
    """Replace each element ``s`` by ``callable(s, a, b)``, ``a`` and ``b`` from ``x`` and ``y`` broadcast to
    this shape."""
    return _map(self, "map2_", (("x", x), ("y", y)), callable)


def _map(self, name: str, operands: tuple, callable) -> Tensor:
    """map_ and map2_: ``callable`` over this tensor's elements and the operands' (CPU tensors of this dtype,
    broadcast to this shape), in place."""
    from .legacy_types import type_string
    _require_cpu(self, name)
    for position, (argument, other) in enumerate(operands, start=1):
        tensor_argument(name, argument, other, position=position)
    _require_callable(name, callable)
    columns = [F.reshape(self, (-1,)).tolist()]
    for argument, other in operands:
        if other.device.type != "cpu" or other.dtype is not self.dtype:
            raise TypeError(f"{name}: expected {type_string(self)} for '{argument}' (got {type_string(other)})")
        columns.append(F.reshape(F.expand(other, tuple(self.shape)), (-1,)).tolist())
    return _store(self, [callable(*values) for values in zip(*columns)], name)


def install() -> None:
    Tensor.narrow = narrow
    Tensor.new_zeros = _creator(F.zeros)
    Tensor.new_ones = _creator(F.ones)
    Tensor.new_empty = _creator(F.empty)
    Tensor.new_full = new_full
    Tensor.new_tensor = new_tensor
    Tensor.clip = Tensor.clamp
    Tensor.clip_ = Tensor.clamp_
    Tensor.data_ptr = data_ptr
    Tensor.storage_offset = storage_offset
    Tensor.nbytes = property(lambda self: self.numel() * self.dtype.itemsize)
    Tensor.itemsize = property(lambda self: self.dtype.itemsize)
    Tensor.pin_memory = pin_memory
    Tensor.is_pinned = is_pinned
    Tensor.apply_ = apply_
    Tensor.map_ = map_
    Tensor.map2_ = map2_
