"""``tensor[index]`` and ``tensor[index] = value`` with NumPy/PyTorch semantics.

Ints, slices, None and Ellipsis become views (select, slice, unsqueeze). Integer
tensors, lists and bool masks are advanced indices: masks turn into integer
indices through ``nonzero``, and the gather/scatter is done by the ``index`` and
``index_put_`` ops on the view left after the basic part.
"""
from __future__ import annotations

import operator

from ..autograd.setitem import needs_tracking, tracked_setitem
from ..creation import tensor
from ..dispatch.schema.dtypes import bool_, int64
from ..dispatch.schema.errors import ArgumentError, ShapeError
from ..dispatch.ops import F
from . import Tensor


_EVERYTHING = slice(None)
_VALID_INDICES = "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices"


def _is_advanced(entry) -> bool:
    """Tensors, lists, arrays and Python bools (a 0-d mask: ``x[True]`` adds a dim of size 1, as in PyTorch)."""
    return isinstance(entry, (Tensor, list, bool)) or (hasattr(entry, "__array__")
                                                       and not isinstance(entry, (int, float)))


def _as_index_tensor(entry, device) -> Tensor:
    if isinstance(entry, Tensor):
        return entry if entry._device is device else entry.to(device)
    if isinstance(entry, list) and not entry:
        return tensor(entry, dtype=int64, device=device)  # x[[]] selects nothing, as in PyTorch
    return tensor(entry, device=device)


def _consumed(entry) -> int:
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, Tensor) and entry._dtype is bool_:
        return max(entry.ndim, 1) if entry.ndim else 0
    return 1


def _normalize(x: Tensor, index) -> list:
    entries = list(index) if isinstance(index, tuple) else [index]
    entries = [(_as_index_tensor(e, x._device) if _is_advanced(e) else e) for e in entries]
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(e) for e in entries)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {used}) on shape "
                         f"{tuple(x.shape)}")
    if Ellipsis in [e for e in entries if not isinstance(e, Tensor)]:
        at = next(i for i, e in enumerate(entries) if e is Ellipsis and not isinstance(e, Tensor))
        entries[at:at + 1] = [slice(None)] * (x.ndim - used)
    return entries


def _check_entry(entry):
    if isinstance(entry, Tensor):
        if entry._dtype.is_floating_point:
            raise IndexError(f"tensors used as indices must be integer or bool tensors, got {entry._dtype.name}")
    elif not (entry is None or isinstance(entry, slice) or hasattr(entry, "__index__")):
        raise IndexError(f"{_VALID_INDICES} (got {type(entry).__name__})")


def _basic_part(x: Tensor, entries: list):
    """Apply ints, slices and None as views; return the view and the advanced indices by its dims."""
    view, dim, advanced = x, 0, {}
    for entry in entries:
        _check_entry(entry)
        if entry is None:
            view = F.unsqueeze(view, dim)
            dim += 1
        elif isinstance(entry, slice):
            if entry != slice(None):
                step = 1 if entry.step is None else int(entry.step)
                if step <= 0:
                    raise ArgumentError(f"slicing with step {step}: steps must be positive, as in PyTorch")
                view = F.slice(view, dim, entry.start, entry.stop, step)
            dim += 1
        elif isinstance(entry, Tensor):
            if entry._dtype is bool_:
                if tuple(entry.shape) != tuple(view.shape[dim:dim + entry.ndim]):
                    raise IndexError(f"the mask of shape {tuple(entry.shape)} does not match the indexed tensor's "
                                     f"shape {tuple(view.shape)} at dim {dim}")
                if entry.ndim == 0:
                    view = F.unsqueeze(view, dim)
                    advanced[dim] = F.nonzero(F.unsqueeze(entry, 0), as_tuple=True)[0]
                    dim += 1
                    continue
                for offset, coordinate in enumerate(F.nonzero(entry, as_tuple=True)):
                    advanced[dim + offset] = coordinate
                dim += entry.ndim
            else:
                advanced[dim] = entry
                dim += 1
        else:
            view = F.select(view, dim, operator.index(entry))  # PyTorch applies ints first, beside tensor indices
    return view, advanced


def _index_list(view: Tensor, advanced: dict) -> list:
    last = max(advanced)
    return [advanced.get(d) for d in range(last + 1)]


def getitem(x: Tensor, index) -> Tensor:
    if x._data.shape:  # x[i] and x[a:b], the commonest indices, go straight to their op
        if index.__class__ is int:
            return F.select(x, 0, index)
        if index.__class__ is slice and index.step is None and index != _EVERYTHING:
            return F.slice(x, 0, index.start, index.stop, 1)
    view, advanced = _basic_part(x, _normalize(x, index))
    if not advanced:
        return view
    return F.index(view, _index_list(view, advanced))


def setitem(x: Tensor, index, value) -> None:
    if needs_tracking(x, value):
        return tracked_setitem(x, index, value, getitem, _write)
    _write(x, index, value)


def _without_leading_ones(value: Tensor) -> Tensor:
    """``value`` without its leading size-1 dims: PyTorch (and NumPy) assign a (1, 4) value to a (4,) selection."""
    shape = value.shape
    ones = 0
    while ones < len(shape) and shape[ones] == 1:
        ones += 1
    return F.reshape(value, tuple(shape[ones:])) if ones else value


def _write(x: Tensor, index, value) -> None:
    view, advanced = _basic_part(x, _normalize(x, index))
    if not isinstance(value, Tensor):
        value = F.full((), value, dtype=x._dtype, device=x._device)
    elif value._device is not x._device:
        value = value.to(x._device)
    value = _without_leading_ones(value)
    if not advanced:
        try:
            F.copy_(view, value)
        except ShapeError:
            raise ShapeError(f"setitem: a value of shape {tuple(value.shape)} cannot be assigned to a selection of "
                             f"shape {tuple(view.shape)}") from None
        return
    if value._dtype is not x._dtype:
        value = F.to_dtype(value, x._dtype)
    F.index_put_(view, _index_list(view, advanced), value)
