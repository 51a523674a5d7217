"""``tensor[index]`` and ``tensor[index] = value`` with NumPy/PyTorch semantics.

Ints, slices, None and Ellipsis become views (select, slice, unsqueeze). Integer
tensors, lists and bool masks are advanced indices: masks turn into integer
indices through ``nonzero``, and the gather/scatter is done by the ``index`` and
``index_put_`` ops on the view left after the basic part.

These run in loops (a dataset's ``__getitem__``, a sampling step), so the common forms take short roads
built of the same ops: an index of ints, slices and None only is views and, for a write, one ``copy_``;
a list of Python ints is checked here, where its values are known, and one int (``x[:, [-1]]``) is a
one-wide slice; indices that cannot be out of range (those lists, a mask's ``nonzero``) skip the index
ops' value checks; and a bool mask of the indexed shape given one value is a ``where``.
"""
from __future__ import annotations

import operator

from ..autograd.setitem import needs_tracking, tracked_setitem
from ..creation import tensor
from ..dispatch.schema.dtypes import bool_, int64
from ..dispatch.schema.errors import ArgumentError, OutOfRangeError, ShapeError
from ..dispatch.ops import F
from ..dispatch.ops.indexing.value_checks import vouched
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


def _is_int_list(entry) -> bool:
    """A flat, non-empty list of Python ints (not bools, which make a mask): checked on the host."""
    return entry.__class__ is list and bool(entry) and all(i.__class__ is int for i in entry)


def _normalize(x: Tensor, index) -> list:
    entries = list(index) if isinstance(index, tuple) else [index]
    entries = [(_as_index_tensor(e, x._device) if _is_advanced(e) and not _is_int_list(e) else e) for e in entries]
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
        if entry._dtype.is_inexact:
            raise IndexError(f"tensors used as indices must be integer or bool tensors, got {entry._dtype.name}")
    elif not (entry is None or isinstance(entry, slice) or hasattr(entry, "__index__")):
        raise IndexError(f"{_VALID_INDICES} (got {type(entry).__name__})")


def _host_positions(op_name: str, entry: list, dim: int, size: int) -> list:
    """A list of ints as positions in 0..size-1 (negatives counted from the end), or the index op's error."""
    bad = next((i for i in entry if not -size <= i < size), None)
    if bad is not None:
        expected = f"{-size}..{size - 1}" if size else "no index: the dim is empty"
        raise OutOfRangeError(f"{op_name}: index {bad} is out of bounds for dim {dim} with size {size} "
                              f"(expected {expected}; a list of {len(entry)} ints)")
    return [i + size if i < 0 else i for i in entry]


def _basic_part(x: Tensor, entries: list, op_name: str = "index"):
    """Apply ints, slices and None as views. Returns the view, the advanced indices by its dims, whether they are
    all known to be in range (host-checked lists, a mask's coordinates: the index ops need not check them), and
    whether the view stands for an advanced selection (a lone one-int list, applied as a one-wide slice, which
    ``getitem`` copies)."""
    view, dim, advanced = x, 0, {}
    in_range, gathered = True, False
    lists = [e for e in entries if e.__class__ is list]  # of ints (_normalize made every other list a tensor)
    lone = len(lists) == 1 and len(lists[0]) == 1 and not any(isinstance(e, Tensor) for e in entries)
    for entry in entries:
        if entry.__class__ is list:
            positions = _host_positions(op_name, entry, dim, view.shape[dim])
            if lone:
                view = F.slice(view, dim, positions[0], positions[0] + 1, 1)
                gathered = True
            else:
                advanced[dim] = tensor(positions, dtype=int64, device=x._device)
            dim += 1
            continue
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
                in_range = False
                dim += 1
        else:
            view = F.select(view, dim, operator.index(entry))  # PyTorch applies ints first, beside tensor indices
    return view, advanced, in_range, gathered


def _index_list(view: Tensor, advanced: dict) -> list:
    last = max(advanced)
    return [advanced.get(d) for d in range(last + 1)]


def _basic_view(x: Tensor, index):
    """``x[index]`` for an index of ints, slices (steps positive), None and at most one one-int list, applied
    as views without the general road's list of entries: (the view, whether it stands for an advanced selection
    that ``getitem`` copies: the list, as a one-wide slice). None for any other index, which the general road
    handles (and refuses)."""
    entries = index if index.__class__ is tuple else (index,)
    view, dim, left = x, 0, len(x._data.shape)  # left: dims of x not yet consumed by an int, a slice or a list
    gathered = False
    for entry in entries:
        kind = entry.__class__
        if kind is slice:
            left -= 1
            if left < 0:
                return None
            start, stop, step = entry.start, entry.stop, entry.step
            if start is not None or stop is not None or step is not None:
                if step is None:
                    step = 1
                elif step.__class__ is not int or step <= 0:
                    return None
                view = F.slice(view, dim, start, stop, step)
            dim += 1
        elif kind is int:
            left -= 1
            if left < 0:
                return None
            view = F.select(view, dim, entry)
        elif entry is None:
            view = F.unsqueeze(view, dim)
            dim += 1
        elif kind is list and len(entry) == 1 and entry[0].__class__ is int and not gathered:  # x[:, [-1]]
            left -= 1
            if left < 0:
                return None
            size, at = view._data.shape[dim], entry[0]
            if not -size <= at < size:
                return None
            at = at + size if at < 0 else at
            view = F.slice(view, dim, at, at + 1, 1)
            gathered = True
            dim += 1
        else:
            return None
    return view, gathered


def getitem(x: Tensor, index) -> Tensor:
    if x._data.shape:  # x[i] and x[a:b], the commonest indices, go straight to their op
        if index.__class__ is int:
            return F.select(x, 0, index)
        if index.__class__ is slice and index.step is None and index != _EVERYTHING:
            return F.slice(x, 0, index.start, index.stop, 1)
    basic = _basic_view(x, index)
    if basic is not None:
        return F.clone(basic[0]) if basic[1] else basic[0]
    view, advanced, in_range, gathered = _basic_part(x, _normalize(x, index))
    if not advanced:
        return F.clone(view) if gathered else view
    if in_range:
        with vouched():
            return F.index(view, _index_list(view, advanced))
    return F.index(view, _index_list(view, advanced))


def setitem(x: Tensor, index, value) -> None:
    if needs_tracking(x, value):
        return tracked_setitem(x, index, value, getitem, _write)
    _write(x, index, value)


def _without_leading_ones(value: Tensor) -> Tensor:
    """``value`` without its leading size-1 dims: PyTorch (and NumPy) assign a (1, 4) value to a (4,) selection."""
    shape = value._data.shape
    ones = 0
    while ones < len(shape) and shape[ones] == 1:
        ones += 1
    return F.reshape(value, tuple(shape[ones:])) if ones else value


def _as_value(x: Tensor, value) -> Tensor:
    """The value of ``x[index] = value`` as a tensor on x's device, without leading size-1 dims (as it is if
    it is one already)."""
    if value.__class__ is Tensor and value._device is x._device and not (value._data.shape[:1] == (1,)):
        return value
    if not isinstance(value, Tensor):
        return F.full((), value, dtype=x._dtype, device=x._device)
    if value._device is not x._device:
        value = value.to(x._device)
    return _without_leading_ones(value)


def _write(x: Tensor, index, value) -> None:
    basic = _basic_view(x, index)
    if basic is not None:  # x[i] = v, x[a:b] = v, x[:, -1] = v, x[:, [-1]] = v: one copy into the view
        _copy_into(basic[0], _as_value(x, value))
        return
    entries = _normalize(x, index)
    if value.__class__ is not float or not x._dtype.is_floating_point:  # such a float is where's operand as it is
        value = _as_value(x, value)
    if _fills_by_mask(x, entries, value):
        return
    value = _as_value(x, value)
    view, advanced, in_range, _ = _basic_part(x, entries, "index_put_")
    if not advanced:
        _copy_into(view, value)
        return
    if value._dtype is not x._dtype:
        value = F.to_dtype(value, x._dtype)
    if in_range:
        with vouched():
            F.index_put_(view, _index_list(view, advanced), value)
    else:
        F.index_put_(view, _index_list(view, advanced), value)


def _copy_into(view: Tensor, value: Tensor) -> None:
    try:
        F.copy_(view, value)
    except ShapeError:
        raise ShapeError(f"setitem: a value of shape {tuple(value.shape)} cannot be assigned to a selection of "
                         f"shape {tuple(view.shape)}") from None


def _fills_by_mask(x: Tensor, entries: list, value) -> bool:
    """``x[mask] = value`` for a bool mask over x's leading dims and a value that fills every selected element
    alike (a number, or a tensor broadcasting to the dims after the mask): x becomes ``where(mask, value, x)``,
    written back with one copy, instead of the mask's coordinates and a scatter (PyTorch's masked_fill_)."""
    if len(entries) != 1:
        return False
    mask = entries[0]
    if not (isinstance(mask, Tensor) and mask._dtype is bool_ and mask._data.shape):
        return False
    shape, masked = x._data.shape, mask._data.shape
    if shape[:len(masked)] != masked:
        return False
    if isinstance(value, Tensor):
        if not _broadcasts(value._data.shape, shape[len(masked):]):
            return False
        if value._dtype is not x._dtype:
            value = F.to_dtype(value, x._dtype)
    if len(shape) > len(masked):
        mask = F.reshape(mask, masked + (1,) * (len(shape) - len(masked)))
    F.copy_(x, F.where(mask, value, x))
    return True


def _broadcasts(source: tuple, target: tuple) -> bool:
    """Whether an array of shape ``source`` broadcasts to ``target`` (without adding dims to it)."""
    return len(source) <= len(target) and all(s in (1, t) for s, t in zip(reversed(source), reversed(target)))
