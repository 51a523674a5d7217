"""Collation: turning a list of samples into one batch, and converting single samples.

``default_collate`` transposes nested structure (a list of ``(x, y)`` pairs becomes
``[stacked_x, stacked_y]``) and stacks the leaves into tensors with PyTorch's dtypes:
Python floats become float64, ints int64, bools bool, NumPy values keep their dtype.
NumPy values are recognised by their type's module so that this package never imports
NumPy itself; ``ember.as_tensor`` does the conversion.
"""
from __future__ import annotations

import collections.abc
import copy
import re
from abc import ABCMeta

from ...creation import as_tensor, tensor
from ...dispatch.schema.dtypes import float64
from ...functions import stack
from ...tensor import Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_NUMPY_TEXT_OR_OBJECT = re.compile("[SaUO]")  # NumPy dtype.str codes that have no tensor dtype


class NumpyValue(metaclass=ABCMeta):
    """Matches NumPy arrays and scalars in ``isinstance`` checks without importing NumPy.

    NumPy strings are left out: they subclass ``str``/``bytes`` and collate as strings.
    """

    @classmethod
    def __subclasshook__(cls, other):
        if issubclass(other, (str, bytes)):
            return NotImplemented
        if any(getattr(base, "__module__", None) == "numpy" for base in other.__mro__):
            return True  # NumPy's own types, and user subclasses of ndarray
        return NotImplemented


def _is_numpy(value) -> bool:
    return isinstance(value, NumpyValue)


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return stack(batch, 0)


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)  # int64, or bool for a batch of bools


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def collate_numpy_fn(batch, *, collate_fn_map=None):
    first = batch[0]
    if getattr(first, "ndim", 0) == 0:
        # NumPy scalars (or 0-d arrays): one tensor of their dtype. A homogeneous batch goes
        # through a single ``ember.tensor``; a mixed one lets ``stack`` promote.
        if all(type(b) is type(first) and b.dtype == first.dtype for b in batch):
            return tensor(batch, dtype=as_tensor(first).dtype)
        return stack([as_tensor(b) for b in batch], 0)
    if _NUMPY_TEXT_OR_OBJECT.search(first.dtype.str) is not None:
        raise TypeError(_ERROR.format(first.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate ``batch`` (a sequence of samples), recursing through containers.

    ``collate_fn_map`` maps an element type (or tuple of types) to a function
    ``fn(batch, *, collate_fn_map)``; the exact type is looked up first, then each key with
    ``isinstance`` in insertion order. Extend ``default_collate_fn_map`` to teach
    ``default_collate`` a new leaf type.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for leaf_type, fn in collate_fn_map.items():
            if isinstance(elem, leaf_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    def recurse(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        merged = {key: recurse([d[key] for d in batch]) for key in elem}
        return _rebuild_mapping(elem, merged)
    if _is_namedtuple(elem):
        return elem_type(*(recurse(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence) and not isinstance(elem, (str, bytes)):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [recurse(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return fields  # a list, as PyTorch returns for tuples
        return _rebuild_sequence(elem, fields)
    raise TypeError(_ERROR.format(elem_type))


def _rebuild_mapping(template, items: dict):
    """``items`` in ``template``'s mapping type where that type can be rebuilt, else a dict."""
    try:
        if isinstance(template, collections.abc.MutableMapping):
            clone = copy.copy(template)
            clone.update(items)
            return clone
        return type(template)(items)
    except TypeError:
        return items


def _rebuild_sequence(template, items: list):
    """``items`` in ``template``'s sequence type where that type can be rebuilt, else a list."""
    try:
        if isinstance(template, collections.abc.MutableSequence):
            clone = copy.copy(template)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(template)(items)
    except TypeError:
        return items


default_collate_fn_map: dict = {
    Tensor: collate_tensor_fn,
    NumpyValue: collate_numpy_fn,  # before float: NumPy's float64 subclasses float
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch (see the module docstring for the rules).

    ``default_collate([(ember.tensor([1., 2.]), 0), (ember.tensor([3., 4.]), 1)])`` is
    ``[tensor([[1., 2.], [3., 4.]]), tensor([0, 1])]``: a list of a stacked float32 tensor
    and an int64 tensor.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Convert one sample without batching: NumPy arrays and scalars become tensors, containers recurse.

    Used when automatic batching is off (``batch_size=None``); everything else passes through.
    """
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        if _NUMPY_TEXT_OR_OBJECT.search(data.dtype.str) is not None:
            return data  # text and object arrays have no tensor dtype
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data

