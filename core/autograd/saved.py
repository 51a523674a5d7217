"""What a graph node keeps for its backward: tensors with the version they had when saved."""
from __future__ import annotations

import weakref

from ..tensor import Tensor, wrap_view

_MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace "
             "operation: {what} of {op} is at version {now}; expected version {then} instead")


def modified_message(what: str, op_name: str, now: int, then: int) -> str:
    return _MODIFIED.format(what=what, op=op_name, now=now, then=then)


class SavedTensor:
    """An input kept as the tensor itself (it already points at older nodes), or an output kept with its
    array as it was when saved plus a weak link to its node (a strong one would be a reference cycle); unpacking
    an output gives a fresh view of that array attached to the node."""

    __slots__ = ("tensor", "data", "version", "node_ref", "output_nr", "requires_grad")

    def __init__(self, tensor, node=None, output_nr: int = 0) -> None:
        self.version = tensor._version[0]
        self.tensor = tensor
        if node is None:
            self.node_ref = None
        else:
            self.data = tensor._data
            self.node_ref = weakref.ref(node)
            self.output_nr = output_nr
            self.requires_grad = tensor._dtype.is_inexact  # outputs of a recorded node require grad

    def unpack(self, op_name: str, what: str):
        t = self.tensor
        if t._version[0] != self.version:
            raise RuntimeError(modified_message(what, op_name, t._version[0], self.version))
        if self.node_ref is None:
            return t
        out = wrap_view(self.data, t._dtype, t._device, t)
        node = self.node_ref()
        if node is not None and self.requires_grad:
            out.requires_grad = True
            out.grad_fn = node
            out._output_nr = self.output_nr
        return out


def save(value, node=None):
    """Wrap tensors (and lists of tensors) for saving; other values are kept as they are. With ``node``,
    the values are that node's outputs, numbered by their position."""
    if value.__class__ is Tensor:
        return SavedTensor(value, node)
    if isinstance(value, (list, tuple)) and value and all(v is None or v.__class__ is Tensor for v in value):
        return [None if v is None else SavedTensor(v, node, nr) for nr, v in enumerate(value)]
    return value


def unpack(value, op_name: str, name: str):
    """The saved value ``name`` of op ``op_name``, checked against in-place changes since it was saved."""
    if value.__class__ is SavedTensor or value.__class__ is HookedSaved:
        return value.unpack(op_name, f"the saved '{name}'")
    if isinstance(value, list) and value and any(isinstance(v, (SavedTensor, HookedSaved)) for v in value):
        return [None if v is None else v.unpack(op_name, f"the saved '{name}'") for v in value]
    return value


# -- saved-tensor hooks (``ember.autograd.graph.saved_tensors_hooks``) ---------------------------------
hook_stack: list[tuple] = []  # (pack, unpack) pairs, innermost last; empty on the fast path


class HookedSaved:
    """A saved tensor handed to the innermost ``pack`` hook: what it returned, and the ``unpack`` that turns
    that back into a tensor when backward needs it (the hooks then answer for in-place changes)."""

    __slots__ = ("packed", "unpack_hook")

    def __init__(self, tensor, hooks: tuple) -> None:
        pack_hook, self.unpack_hook = hooks
        if isinstance(pack_hook, str):  # disable_saved_tensors_hooks
            raise RuntimeError(pack_hook)
        self.packed = pack_hook(tensor)

    def unpack(self, op_name: str, what: str):
        out = self.unpack_hook(self.packed)
        if not isinstance(out, Tensor):
            raise TypeError(f"{op_name}: the unpack hook of saved_tensors_hooks returned {type(out).__name__} "
                            f"for {what}; it must return a Tensor")
        return out


def hooked(value, version):
    """``value`` (as an OpNode or a Function keeps it) passed through the active pack hook; returns the new
    value and its version entry (None: unpack through ``unpack``)."""
    hooks = hook_stack[-1]
    if value.__class__ is SavedTensor:
        return HookedSaved(value.unpack("save", "a saved tensor"), hooks), None
    if isinstance(value, Tensor):
        return HookedSaved(value, hooks), None
    if isinstance(value, list) and any(v.__class__ is SavedTensor for v in value):
        return [None if v is None else HookedSaved(v.unpack("save", "a saved tensor"), hooks) for v in value], None
    return value, version
