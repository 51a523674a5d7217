"""Batched tensors: what a function under ``ember.func.vmap`` sees in place of a whole batch.

A ``BatchedTensor`` stands for one element of a batch. It holds the whole batch in ``_value`` (its
*physical* tensor, the batch dimension first) and the vmap level it belongs to. Its own shape is the
shape of one element (the *logical* shape): ``_data`` is a ``LogicalShape``, so every shape read of the
Tensor class and of the ops' checks sees the element's shape, and any attempt to use it as an array
fails with an error that says why. Op calls on batched tensors never reach a kernel with them: the vmap
mode of their level (``vmap_mode``) runs each call on the physical tensors.

Levels nest: under ``vmap(vmap(f))`` an element of the inner level holds, as its physical tensor, an
element of the outer one. The physical dims of a tensor batched at several levels come in level order
(the outermost vmap's first), so the innermost level's wrapper is the outermost Python object.
"""
from __future__ import annotations

from ..dispatch.execution import links
from ..dispatch.ops import F
from ..tensor import Tensor

_new = object.__new__


class VmapUnsupported(RuntimeError):
    """What vmap cannot batch: a read of one element's values (data-dependent control flow, ``item``), or an
    in-place write of a batch into an unbatched tensor. A composite that meets it runs once per element."""


_VALUE_READ = ("vmap: a batched tensor's values cannot be read one element at a time: this happens with "
               "data-dependent Python control flow or a host read (item, tolist, bool, numpy) inside the vmapped "
               "function, which vmap cannot batch; move it out of the function or use ops such as ember.where")


class LogicalShape:
    """The ``_data`` of a batched tensor: its per-element shape, and nothing an array kernel could use."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple) -> None:
        self.shape = shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __getattr__(self, name: str):
        raise VmapUnsupported(f"{_VALUE_READ} (asked for '{name}' of its array)")

    def __repr__(self) -> str:
        return f"LogicalShape({self.shape})"


class BatchedTensor(Tensor):
    """One element of a batch at a vmap level (see the module docstring)."""

    __slots__ = ("_value", "_level")

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if flag and not self._value.requires_grad:
            raise RuntimeError("vmap: requires_grad_() cannot be called on a batched tensor inside vmap; make the "
                               "input require grad before vmap, or use ember.func.grad inside vmap")
        if not flag and self._value.requires_grad:
            raise RuntimeError("vmap: requires_grad_(False) cannot be called on a batched tensor; use detach()")

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @grad_fn.setter
    def grad_fn(self, node) -> None:
        if node is not None:
            raise RuntimeError("vmap: a batched tensor cannot be given a grad_fn")

    def detach(self) -> "BatchedTensor":
        return batched(self._value.detach(), self._level)

    def stride(self, dim: int | None = None):
        strides = self._value.stride()[1:]
        return strides if dim is None else strides[dim]

    def is_contiguous(self, memory_format=None) -> bool:
        return True  # each element is laid out as its op results make it; reshapes under vmap copy as needed

    def data_ptr_id(self) -> int:
        return self._value.data_ptr_id()

    def _host(self):
        raise VmapUnsupported(_VALUE_READ)

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    __str__ = __repr__


def batched(value: Tensor, level: int) -> BatchedTensor:
    """The element of batch ``value`` (batch dim first) at vmap level ``level``."""
    t = _new(BatchedTensor)
    t._value = value
    t._level = level
    t._data = LogicalShape(tuple(value.shape)[1:])
    t._dtype = value._dtype
    t._device = value._device
    t._version = value._version
    t._base = None
    t.grad = None
    t._output_nr = 0
    t._accumulator = None
    t._inference = value._inference
    return t


def is_batched_at(t, level: int) -> bool:
    """Whether ``t`` is batched at ``level`` (at any depth of its wrappers)."""
    while t.__class__ is BatchedTensor:
        if t._level == level:
            return True
        if t._level < level:
            return False
        t = t._value
    return False


def unwrap_all(t) -> tuple[Tensor, tuple[int, ...]]:
    """``t``'s plain physical tensor and the levels it is batched at, in the order of their dims (outermost
    vmap first)."""
    levels = []
    while t.__class__ is BatchedTensor:
        levels.append(t._level)
        t = t._value
    return t, tuple(reversed(levels))


def rewrap(physical: Tensor, levels: tuple[int, ...]) -> Tensor:
    """The inverse of ``unwrap_all``: ``physical``'s leading dims are the batches of ``levels``, in order."""
    t = physical
    for level in levels:
        t = batched(t, level)
    return t


def with_levels(t: Tensor, sizes: dict[int, int]) -> Tensor:
    """``t`` batched at every level of ``sizes`` (level -> batch size): where it is not batched at one, its
    value is the same for every element, expanded (no copy) along a new batch dim."""
    physical, levels = unwrap_all(t)
    missing = [level for level in sorted(sizes) if level not in levels]
    if not missing:
        return t
    order = sorted(set(levels) | set(missing))
    for level in missing:
        at = order.index(level)
        physical = F.unsqueeze(physical, at)
        shape = list(physical.shape)
        shape[at] = sizes[level]
        physical = F.expand(physical, tuple(shape))
    return rewrap(physical, tuple(order))


def without_levels(t: Tensor, levels: tuple[int, ...]) -> Tensor:
    """``t`` with the batch dims of ``levels`` turned into its leading logical dims (in level order): what the
    autograd graph recorded while those levels were active holds, and the levels above them stay batched."""
    physical, have = unwrap_all(t)
    keep = tuple(level for level in have if level not in levels)
    if not keep:
        return physical
    moved = [have.index(level) for level in keep]
    rest = [i for i in range(len(have)) if have[i] not in keep]
    order = moved + rest + list(range(len(have), physical.dim()))
    if order != list(range(physical.dim())):
        physical = F.permute(physical, order)
    return rewrap(physical, keep)


def restored_levels(t: Tensor, levels: tuple[int, ...]) -> Tensor:
    """The inverse of ``without_levels``: ``t``'s leading logical dims become the batch dims of ``levels``."""
    if not levels:
        return t
    physical, have = unwrap_all(t)
    current = list(have) + list(levels)
    order = sorted(current)
    permutation = [current.index(level) for level in order] + list(range(len(current), physical.dim()))
    if permutation != list(range(physical.dim())):
        physical = F.permute(physical, permutation)
    return rewrap(physical, tuple(order))


def requiring_grad(t: Tensor) -> Tensor:
    """``t`` as a tensor that requires grad: a view of its physical tensor, recorded where that requires grad
    already (so an outer graph still reaches it), else a leaf of its own."""
    physical, levels = unwrap_all(t)
    alias = F.view(physical, tuple(physical.shape))
    if not alias.requires_grad:
        alias.requires_grad_()
    return rewrap(alias, levels)


def zeros_leaf_like(t: Tensor) -> Tensor:
    """Zeros shaped as ``t`` (batched as it is) whose physical tensor is a leaf that requires grad."""
    physical, levels = unwrap_all(t)
    return rewrap(F.zeros_like(physical).requires_grad_(), levels)


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """The tensor a batched tensor stands on: its physical tensor (all the way down with ``recurse``); any other
    tensor as it is. For looking at values in a debugger, as ``torch.func.debug_unwrap``."""
    if tensor.__class__ is not BatchedTensor:
        return tensor
    return unwrap_all(tensor)[0] if recurse else tensor._value


def whole(t):
    """The plain tensor holding every value ``t`` stands for (its physical tensor, for a batched one)."""
    return unwrap_all(t)[0] if t.__class__ is BatchedTensor else t


links.register_whole(whole)

__all__ = ["debug_unwrap", "BatchedTensor", "LogicalShape", "VmapUnsupported", "batched", "is_batched_at",
           "unwrap_all", "rewrap", "with_levels", "without_levels", "restored_levels", "requiring_grad",
           "zeros_leaf_like", "whole"]
