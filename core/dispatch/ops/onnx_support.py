"""ONNX building blocks that several op lowerings share (the ``onnx=`` field of ``defop``).

Written only against the exporter's graph builder ``g`` (``ember.onnx.builder``). Most of them exist because
onnxruntime has no kernel for some dtype (no bool ``Where``, ``Less`` or ``ReduceMax``) or because an ONNX
operator differs from PyTorch in a corner (``ReduceMax`` skips NaN, ``Mod`` with ``fmod=1`` is C's fmod).
"""
from __future__ import annotations

from ..schema.dtypes import bool_, int32, int64

#: The widest int64 magnitude, for Slice ends that mean "to the very end" in either direction.
INT64_MAX = 2 ** 63 - 1
INT64_MIN = -2 ** 63


def dtype_or_out(g, name: str | None = None):
    """The dtype an op computes in: the promoted compute dtype, else its operand's dtype, else its result's."""
    if g.compute is not None:
        return g.compute
    if name is not None and name in g.known:
        return g.dtype_of(name)
    return g.out_dtypes[0]


def rank(g, name: str) -> int:
    return len(g.shape_of(name))


def size_of(g, name: str, dim: int) -> str:
    """A 1-D int64 tensor holding ``name``'s size along ``dim``, read from its shape at run time."""
    return g.op("Shape", name, start=dim, end=dim + 1)


def shape_part(g, name: str, start: int, end: int | None = None) -> str:
    """``shape(name)[start:end]`` as a 1-D int64 tensor, read at run time."""
    return g.op("Shape", name, start=start) if end is None else g.op("Shape", name, start=start, end=end)


def reshape(g, name: str, shape: str, *, zero_means_zero: bool = True) -> str:
    """Reshape to the 1-D int64 tensor ``shape``; a 0 there is a size of 0 (``allowzero``), as in Ember,
    unless ``shape`` holds a -1 (ONNX forbids both together)."""
    return g.op("Reshape", name, shape, allowzero=int(zero_means_zero))


def where(g, condition: str, a: str, b: str, dtype) -> str:
    """``Where`` for every dtype: onnxruntime has no bool kernel, so bools select with And/Or."""
    if dtype is bool_:
        return g.op("Or", g.op("And", condition, a), g.op("And", g.op("Not", condition), b))
    return g.op("Where", condition, a, b)


def in_dtype(g, op_type: str, inputs: list, dtype, via, *, outputs: int = 1, **attributes):
    """``op_type`` run in ``via`` where onnxruntime lacks a kernel for ``dtype`` (bool comparisons and
    reductions); exact, since ``via`` holds every value of ``dtype``. Results are cast back to ``dtype``."""
    if dtype is not bool_:
        return g.op(op_type, *inputs, outputs=outputs, **attributes)
    cast = [None if x is None else g.cast(x, via) for x in inputs]
    result = g.op(op_type, *cast, outputs=outputs, **attributes)
    return g.cast(result, dtype) if outputs == 1 else tuple(g.cast(r, dtype) for r in result)


def as_ordered(g, name: str, dtype) -> str:
    """Bools as int32, so that ordering ops (Less, ReduceMax, TopK) have a kernel; others as they are."""
    return g.cast(name, int32) if dtype is bool_ else name


def as_bool(g, name: str, dtype) -> str:
    """Truth values: nonzero is true (NaN too), as Ember's logical ops read numbers."""
    return name if dtype is bool_ else g.cast(name, bool_)


def constant_like(g, name: str, truth: bool) -> str:
    """A bool tensor shaped like ``name``, all ``truth``."""
    return g.op("Expand", g.const(truth, bool_), g.op("Shape", name))


def any_nan(g, name: str, dims, keepdim: bool) -> str:
    """Whether each reduced slice holds a NaN (bool), for reductions that must propagate it."""
    hits = g.cast(g.op("IsNaN", name), int32)
    return g.cast(g.reduce("ReduceMax", hits, dims, keepdim), bool_)


def trunc(g, name: str) -> str:
    """Rounding toward zero (ONNX has no Trunc): ceil below zero, floor above."""
    zero = g.const(0, g.compute)
    return g.op("Where", g.op("Less", name, zero), g.op("Ceil", name), g.op("Floor", name))


def python_mod_fix(g, remainder: str, divisor: str) -> str:
    """Where a C-style remainder is nonzero and its sign differs from the divisor's (Python's rule is the
    divisor's sign), as a bool tensor."""
    zero = g.const(0, g.compute)
    signs_differ = g.op("Xor", g.op("Less", remainder, zero), g.op("Less", divisor, zero))
    return g.op("And", g.op("Not", g.op("Equal", remainder, zero)), signs_differ)


def index_as_int64(g, name: str) -> str:
    """An index tensor in int64, the index dtype every ONNX gather/scatter takes."""
    return name if g.dtype_of(name) is int64 else g.cast(name, int64)


__all__ = ["INT64_MAX", "INT64_MIN", "dtype_or_out", "rank", "size_of", "shape_part", "reshape", "where",
           "in_dtype", "as_ordered", "as_bool", "constant_like", "any_nan", "trunc", "python_mod_fix",
           "index_as_int64"]
