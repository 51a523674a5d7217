"""The errors of sparse tensors, and the stand-in a sparse tensor holds where a dense one holds its array.

A sparse tensor is an ``ember.Tensor`` (so ``isinstance`` checks, ``nn`` code and autograd accept it), but
the dense ops read ``tensor._data``, a native array, and a sparse tensor has none: its values live in dense
component tensors. ``NoDenseArray`` stands in for the array. It answers ``.shape`` (plan keys, autograd's
shape checks and error messages read that) and refuses everything else with ``UnsupportedLayoutError``,
naming the op that was handed the sparse tensor, so a dense op never computes on it silently.
"""
from __future__ import annotations

import sys

from ..dispatch.schema.errors import EmberError


class UnsupportedLayoutError(EmberError, NotImplementedError):
    """An op with no implementation for a sparse layout. PyTorch raises NotImplementedError ("Could not run
    'aten::exp' with arguments from the 'SparseCPU' backend"); this is one, and a RuntimeError."""


def _calling_op() -> str | None:
    """The name of the op whose dispatch reached the stand-in: the nearest caller frame holding an ``op``
    with a ``name`` and a ``signature`` (the dispatcher's and executor's frames do). Only on the error path."""
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return None
        op = frame.f_locals.get("op")
        if hasattr(op, "signature") and isinstance(getattr(op, "name", None), str):
            return op.name
        frame = frame.f_back
    return None


class NoDenseArray:
    """What a sparse tensor has in place of a native array: its shape, and a clear error for any other use."""

    __slots__ = ("shape", "layout_name")

    def __init__(self, shape: tuple[int, ...], layout_name: str) -> None:
        self.shape = tuple(shape)
        self.layout_name = layout_name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def refuse(self, what: str = "") -> UnsupportedLayoutError:
        op = _calling_op()
        where = f"{op}: " if op else ""
        return UnsupportedLayoutError(
            f"{where}no implementation for a {self.layout_name} tensor of shape {self.shape}{what}: this op "
            f"needs a dense tensor. Convert with .to_dense(), or use the sparse operations (ember.sparse.mm, "
            f"ember.sparse.sum, ember.sparse.softmax, element-wise ops that keep zeros at zero, ...)")

    def __getattr__(self, name: str):
        raise self.refuse()

    def __array__(self, *args, **kwargs):
        raise self.refuse()

    def __array_ufunc__(self, *args, **kwargs):
        raise self.refuse()

    def __array_function__(self, *args, **kwargs):
        raise self.refuse()

    def __getitem__(self, key):
        raise self.refuse()

    def __len__(self) -> int:
        raise self.refuse()

    def __iter__(self):
        raise self.refuse()

    def __repr__(self) -> str:
        return f"NoDenseArray(shape={self.shape}, layout={self.layout_name})"
