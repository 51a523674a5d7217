"""Facts about a tensor: its kind (``is_signed``, ``is_floating_point``, ``is_cpu``, ``is_inference``, ...),
its place in memory (``get_device``, ``data_ptr``, ``storage_offset``, ``nbytes``, ``dim_order``, ...) and
in the graph (``output_nr``). None computes on values."""
from __future__ import annotations

from ..dispatch.schema.binding import tensor_argument
from ..dispatch.schema.errors import DeviceError, describe
from . import Tensor


def ndimension(self: Tensor) -> int:
    """The number of dims (``dim()``'s older name)."""
    return self.ndim


def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative values: every floating and signed integer dtype, not uint8 or bool."""
    return tensor_argument("is_signed", "input", input).dtype.is_signed


def is_floating_point(input: Tensor) -> bool:
    return tensor_argument("is_floating_point", "input", input).dtype.is_floating_point


def is_complex(input: Tensor) -> bool:
    return tensor_argument("is_complex", "input", input).dtype.is_complex


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor; PyTorch refuses tensors of no or several elements."""
    count = tensor_argument("is_nonzero", "input", input).numel()
    if count == 0:
        raise RuntimeError("is_nonzero: Boolean value of Tensor with no values is ambiguous")
    if count > 1:
        raise RuntimeError(f"is_nonzero: Boolean value of Tensor with more than one value is ambiguous "
                           f"({describe(input)})")
    return bool(input.item())


def is_same_size(input: Tensor, other: Tensor) -> bool:
    tensor_argument("is_same_size", "input", input, position=1)
    return tuple(input.shape) == tuple(tensor_argument("is_same_size", "other", other, position=2).shape)


def is_neg(input: Tensor) -> bool:
    """Always False: Ember negates eagerly, it never keeps a lazy negation bit."""
    tensor_argument("is_neg", "input", input)
    return False


def is_conj(input: Tensor) -> bool:
    """Always False: Ember conjugates eagerly (``conj`` is ``conj_physical``), it never keeps a conjugate bit."""
    tensor_argument("is_conj", "input", input)
    return False


def resolve_neg(input: Tensor) -> Tensor:
    """input itself, as PyTorch returns a tensor whose negation bit is already clear."""
    return tensor_argument("resolve_neg", "input", input)


def get_device(input: Tensor) -> int:
    """-1 for a CPU tensor, else the index of its device."""
    device = tensor_argument("get_device", "input", input).device
    return -1 if device.type == "cpu" else (device.index or 0)


def output_nr(self: Tensor) -> int:
    """Which output of the op that made this tensor it is (0 for leaves)."""
    return self._output_nr


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same elements of one storage (same storage, offset, shape and strides)."""
    tensor = tensor_argument("is_set_to", "tensor", tensor, position=1)
    return (self.device == tensor.device and self.data_ptr_id() == tensor.data_ptr_id()
            and self.storage_offset() == tensor.storage_offset() and tuple(self.shape) == tuple(tensor.shape)
            and self.stride() == tensor.stride())


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


def is_pinned(self, device=None) -> bool:
    """Ember never allocates page-locked host memory."""
    return False


def is_cpu(self: Tensor) -> bool:
    return self.device.type == "cpu"


def is_meta(self: Tensor) -> bool:
    return self.device.type == "meta"


def name(self: Tensor) -> None:
    """Always None: Ember has no named tensors."""
    return None


def nbytes(self: Tensor) -> int:
    return self.numel() * self.dtype.itemsize


def itemsize(self: Tensor) -> int:
    return self.dtype.itemsize


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


def const_data_ptr(self: Tensor) -> int:
    """``data_ptr()``, for a caller that promises only to read."""
    return self.data_ptr()
