"""Small Tensor methods and torch-level functions PyTorch programs use that the op schema does not generate:
facts about a tensor (``ndimension``, ``is_signed``, ``is_nonzero``, ``is_same_size``, ``is_neg``,
``get_device``, ``output_nr``, ``is_set_to``), the legacy constructor ``new``, ``sum_to_size`` and
``fill_diagonal_``. All are written in Ember tensor operations.
"""
from __future__ import annotations

import math

from .dispatch.binding import tensor_argument
from .dispatch.dtypes import int64
from .dispatch.errors import DtypeError, ShapeError, describe
from .dispatch.ops import F
from .methods import write_result
from .tensor import Tensor

# -- facts --------------------------------------------------------------------------------------------------


def ndimension(self: Tensor) -> int:
    """The number of dims (``dim()``'s older name)."""
    return self.ndim


def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative values: every floating and signed integer dtype, not uint8 or bool."""
    return input.dtype.is_signed


def is_floating_point(input: Tensor) -> bool:
    return tensor_argument("is_floating_point", "input", input).dtype.is_floating_point


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
    return tuple(input.shape) == tuple(tensor_argument("is_same_size", "other", other, position=1).shape)


def is_neg(input: Tensor) -> bool:
    """Always False: Ember negates eagerly, it never keeps a lazy negation bit."""
    return False


def resolve_neg(input: Tensor) -> Tensor:
    """input itself, as PyTorch returns a tensor whose negation bit is already clear."""
    return input


def get_device(input: Tensor) -> int:
    """-1 for a CPU tensor, else the index of its device."""
    device = input.device
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


# -- new, sum_to_size, fill_diagonal_ ---------------------------------------------------------------------

def new(self: Tensor, *args, **kwargs) -> Tensor:
    """The legacy constructor with this tensor's dtype and (unless ``device=`` says otherwise) device."""
    from .legacy_types import construct
    kwargs.setdefault("device", self.device)
    return construct(self.dtype, None, "new", args, kwargs)


def sum_to_size(self: Tensor, *size) -> Tensor:
    """This tensor summed down to ``size``, which it must expand to (a gradient's reduction to an input)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, t) for s, t in zip(size, shape[lead:])):
        raise ShapeError(f"sum_to_size: size {list(size)} is not expandable to the size of the tensor {list(shape)}")
    dims = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(size) if s == 1 and shape[lead + d] != 1)
    out = F.sum(self, dims, True) if dims else self
    return F.reshape(out, size) if tuple(out.shape) != size else out


def _diagonal_positions(shape: tuple, wrap: bool) -> range:
    """Flat positions of the main diagonal: a step of one past each row's length; on a tall matrix ``wrap``
    starts again below the square part (NumPy's fill_diagonal)."""
    step = sum(math.prod(shape[d + 1:]) for d in range(len(shape)))
    end = math.prod(shape) if wrap or len(shape) > 2 else min(shape[0], shape[1]) * shape[1]
    return range(0, end, step)


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Writes fill_value on the main diagonal (all dims of equal length beyond two), in place."""
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise ShapeError(f"fill_diagonal_: dimensions must larger than 1 ({describe(self)})")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ShapeError(f"fill_diagonal_: all dimensions of input must be of equal length ({describe(self)})")
    if isinstance(fill_value, Tensor):
        if fill_value.numel() != 1:
            raise DtypeError(f"fill_diagonal_: fill_value must be a number, got {describe(fill_value)}")
        fill_value = fill_value.item()
    positions = _diagonal_positions(shape, wrap)
    where_to = F.arange(positions.start, max(positions.stop, positions.start), positions.step, dtype=int64,
                        device=self.device)
    flat = F.index_put_(F.clone(F.reshape(self, (-1,))), [where_to],
                        F.full((), fill_value, dtype=self.dtype, device=self.device))
    return write_result(self, F.reshape(flat, shape), "fill_diagonal")


#: Both Tensor methods and torch-level functions (``torch.get_device`` is ember.misc_names's, over the method).
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """transpose under NumPy's names."""
    return F.transpose(input, axis0, axis1)


def _split_method(name: str):
    """Tensor.hsplit and kin name their argument split_size_or_sections (torch.hsplit: indices_or_sections)."""
    function = getattr(F, name)

    def method(self, split_size_or_sections):
        return function(self, split_size_or_sections)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = function.__doc__
    return method


_FACTS = {"is_signed": is_signed, "is_nonzero": is_nonzero, "is_same_size": is_same_size, "is_neg": is_neg,
          "resolve_neg": resolve_neg}


def install() -> None:
    for name, function in _FACTS.items():
        setattr(Tensor, name, function)
    Tensor.get_device = get_device
    Tensor.ndimension = ndimension
    Tensor.output_nr = property(output_nr)
    Tensor.is_set_to = is_set_to
    Tensor.new = new
    Tensor.sum_to_size = sum_to_size
    Tensor.fill_diagonal_ = fill_diagonal_
    Tensor.swapaxes = swapaxes
    for name in ("hsplit", "vsplit", "dsplit"):
        setattr(Tensor, name, _split_method(name))


def export(namespace: dict) -> None:
    """The torch-level functions: ``ember.is_nonzero(t)`` and the like."""
    namespace.update(_FACTS)
    namespace["is_floating_point"] = is_floating_point
    namespace["swapaxes"] = swapaxes
