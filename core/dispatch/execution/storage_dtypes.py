"""Dtypes a backend stores but does not compute in: their kernel calls run in float32.

CuPy 14 holds bfloat16 (ml_dtypes') and copies it, but has a bfloat16 loop for only some of its ufuncs:
``where``, sorts and scatter-add have none and answer in float32 or refuse, and a Python float beside a
bfloat16 array picks the float32 loop. Rather than patch each of those, such a backend names the dtype in
``Backend.storage_only_dtypes``, and every kernel plan that reads or makes it computes in float32 instead:
operands of the dtype are widened, a dtype attribute naming it becomes float32, and each result the plan
says is of the dtype is rounded back once. This is PyTorch's own arithmetic for bfloat16 (float32 "opmath"
with one rounding per op), so results match it at least as closely as native bfloat16 loops would.

Left alone: views and ops that write into an operand (widening would copy, and the write would be lost),
``to_dtype``, which converts to and from the dtype itself, and ``rand_uniform``, whose guard against
rounding up to ``high`` needs the dtype it returns.

A kernel may bring its own form for these calls: ``kernel.for_storage_dtypes(widened)`` is given the
float32 road described here and returns the kernel the plan runs instead, one that reads and writes the
stored dtype where it has loops for it and takes ``widened`` elsewhere (the CPU's bfloat16 kernels).
"""
from __future__ import annotations

from typing import Any, Callable

from ..schema.dtypes import dtype as DType, float32
from ..schema import OpDef

#: ops that must see the stored dtype itself: the conversion every widening goes through, and uniform draws,
#: which keep below ``high`` by a step of the dtype they return
_NATIVE_OPS = frozenset({"to_dtype", "rand_uniform"})


def through_float32(op: OpDef, kernel: Callable, values: list, compute: DType | None, out,
                    storage_only: frozenset, cast: Callable) -> Callable | None:
    """``kernel`` computing in float32 for a call with these bound ``values``, or None when the call
    neither reads nor makes a dtype of ``storage_only`` (or is a view, an in-place write or a cast).

    ``compute``/``out`` are the plan's dtypes; ``cast(native, dtype)`` is the backend's ``to_dtype``."""
    if not storage_only or op.view or op.mutates or op.name in _NATIVE_OPS:
        return None
    widen = _positions_to_widen(op, values, compute, storage_only)
    dtype_attrs = tuple(i for i in op.attr_positions if isinstance(values[i], DType) and values[i] in storage_only)
    targets = _narrowing_targets(out, storage_only)
    if not (widen or dtype_attrs or targets):
        return None

    def widened(*args: Any):
        args = list(args)
        for i in widen:
            value = args[i]
            if isinstance(value, (list, tuple)):
                args[i] = [None if v is None else cast(v, float32) for v in value]
            elif value is not None and not isinstance(value, (bool, int, float)):
                args[i] = cast(value, float32)
        for i in dtype_attrs:
            args[i] = float32
        result = kernel(*args)
        if not targets:
            return result
        if not isinstance(result, (tuple, list)):
            return cast(result, targets[0])
        padded = targets + targets[-1:] * (len(result) - len(targets))  # '*' outputs: one declared dtype
        narrowed = [r if t is None or r is None else cast(r, t) for r, t in zip(result, padded)]
        return tuple(narrowed) if isinstance(result, tuple) else narrowed
    widened.__wrapped__ = kernel
    native = getattr(kernel, "for_storage_dtypes", None)
    return widened if native is None else native(widened)


def _positions_to_widen(op: OpDef, values: list, compute: DType | None, storage_only: frozenset) -> tuple:
    """Tensor positions whose native argument will be of a storage-only dtype."""
    from . import links
    Tensor = links.tensor.type
    positions = []
    for i in op.tensor_positions:
        promoted = compute is not None and op.params[i].type in ("Tensor", "Tensor?", "Tensor[]")
        value = values[i]
        items = value if isinstance(value, (list, tuple)) else (value,)
        dtypes = {compute if promoted else t._dtype for t in items if isinstance(t, Tensor)}
        if promoted and not dtypes and value is not None:
            dtypes = {compute}  # a Python number made into a tensor of the compute dtype
        if dtypes & storage_only:
            positions.append(i)
    return tuple(positions)


def _narrowing_targets(out, storage_only: frozenset) -> tuple:
    """Per result, the storage-only dtype to round it back to (None: keep it); () when there is none.
    A single declared dtype stands for every result (an op returning several of one dtype)."""
    dtypes = out if isinstance(out, tuple) else (out,)
    targets = tuple(d if d in storage_only else None for d in dtypes)
    return targets if any(t is not None for t in targets) else ()


__all__ = ["through_float32"]
