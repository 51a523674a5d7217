"""Generated strided kernels: one work-item per element of an output shape, each operand read or
written through its own offset and strides. Elementwise ops, casts and copies are all this.

Operands are broadcast to the output shape (stride 0 along broadcast dims), and adjacent dims that
every operand walks contiguously are merged, so a contiguous tensor of any rank is a 1-d loop.
Kernels are generated per (expression, dtypes, rank) and cached; shapes and strides are arguments.
"""
from __future__ import annotations

import math

import numpy as np

from .array import CLArray, empty
from .cltypes import STORAGE_CTYPE, arg_dtype, compute_ctype, load, scalar_arg, store


class Scalar:
    """A Python number passed to a kernel as an argument of ``dtype``."""
    __slots__ = ("value", "dtype")

    def __init__(self, value, dtype: np.dtype) -> None:
        self.value, self.dtype = value, dtype


def broadcast_strides(a: CLArray, shape: tuple) -> tuple:
    lead = len(shape) - a.ndim
    return (0,) * lead + tuple(0 if size == 1 and target != 1 else stride
                               for size, stride, target in zip(a.shape, a.strides, shape[lead:]))


def collapse(shape: tuple, strides: list[tuple]) -> tuple[tuple, list[tuple]]:
    """Drop size-1 dims and merge runs that every operand walks contiguously."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    merged_shape: list[int] = []
    merged: list[list[int]] = [[] for _ in strides]
    for i in dims:
        if merged_shape and all(m[-1] == st[i] * shape[i] for m, st in zip(merged, strides)):
            merged_shape[-1] *= shape[i]
            for m, st in zip(merged, strides):
                m[-1] = st[i]
            continue
        merged_shape.append(shape[i])
        for m, st in zip(merged, strides):
            m.append(st[i])
    return tuple(merged_shape), [tuple(m) for m in merged]


def by_rows(runtime, dims: tuple) -> bool:
    """Whether to launch over a 2-d range: the innermost dim along axis 0 and the rows of the others along
    axis 1. Then only the row (the same for a whole work-group) is split into coordinates, where a 1-d
    range splits every element's index with 64-bit divisions (16x slower on PoCL, and never free)."""
    return len(dims) >= 2 and dims[-1] >= runtime.min_exact_group


def index_space(ndim: int, rows: bool) -> str:
    """C statements opening a kernel over ``n`` elements of dims d0..d{ndim-1}: the element's linear index
    ``g`` and its coordinates i0.., returning for work-items past the end (see ``by_rows``)."""
    if not rows:
        return "\n    ".join(["const long g = get_global_id(0);", "EMBER_GUARD(g, n)", _split("g", ndim)])
    inner = ndim - 1
    return "\n    ".join([f"const long i{inner} = get_global_id(0);", f"EMBER_GUARD(i{inner}, d{inner})",
                          f"const long row = get_global_id(1), g = row * d{inner} + i{inner};",
                          _split("row", inner)])


def launch(runtime, kernel, dims: tuple, size: int, args: list, rows: bool) -> None:
    """Enqueue a kernel opened by ``index_space`` over ``size`` elements of ``dims``."""
    if rows:
        runtime.launch_rows(kernel, dims[-1], size // dims[-1], *args)
    else:
        runtime.launch(kernel, size, *args)


def _split(linear: str, ndim: int) -> str:
    """C statements splitting ``linear`` into coordinates i0..i{ndim-1} over dims d0..d{ndim-1}."""
    if ndim == 0:
        return ""
    lines = [f"long r = {linear};"]
    for d in range(ndim - 1, 0, -1):
        lines.append(f"long i{d} = r % d{d}; r /= d{d};")
    lines.append("long i0 = r;")
    return "\n    ".join(lines)


def position(name: str, ndim: int) -> str:
    """C expression: operand ``name``'s element offset at coordinates i0.. (args {name}_o, {name}_s*)."""
    return " + ".join([f"{name}_o"] + [f"i{d} * {name}_s{d}" for d in range(ndim)])


_KERNELS: dict = {}


def _broadcast_shape(arrays: list) -> tuple:
    shape = arrays[0].shape
    if all(a.shape == shape for a in arrays):
        return shape
    return tuple(np.broadcast_shapes(*[a.shape for a in arrays]))


def _source(expr: str, operands: list, out_dtype: np.dtype, ndim: int, rows: bool,
            helpers: str) -> tuple[str, list]:
    params, scalar_dtypes, loads = [], [], []
    for k, op in enumerate(operands):
        if isinstance(op, Scalar):
            params.append(f"const {compute_ctype(op.dtype)} x{k}")
            scalar_dtypes.append(arg_dtype(op.dtype))
            continue
        params.append(f"__global const {STORAGE_CTYPE[op.dtype]} *a{k}")
        params += [f"const long a{k}_o"] + [f"const long a{k}_s{d}" for d in range(ndim)]
        scalar_dtypes += [None] + [np.int64] * (1 + ndim)
        loads.append(f"const {compute_ctype(op.dtype)} x{k} = {load(op.dtype, f'a{k}', position(f'a{k}', ndim))};")
    params.append(f"__global {STORAGE_CTYPE[out_dtype]} *out")
    params += ["const long out_o"] + [f"const long out_s{d}" for d in range(ndim)]
    params += ["const long n"] + [f"const long d{d}" for d in range(ndim)]
    scalar_dtypes += [None] + [np.int64] * (2 + 2 * ndim)
    body = "\n    ".join(loads)
    source = helpers + f"""
__kernel void ember_map({', '.join(params)})
{{
    {index_space(ndim, rows)}
    {body}
    {store(out_dtype, 'out', position('out', ndim), expr)}
}}
"""
    return source, scalar_dtypes


def run(runtime, expr: str, operands: list, out_dtype: np.dtype, out: CLArray | None = None,
        shape: tuple | None = None, helpers: str = "") -> CLArray:
    """``out[...] = expr(x0, x1, ...)`` elementwise; a new contiguous array unless ``out`` is given.

    ``helpers`` is C code (inline functions) the expression calls.
    """
    arrays = [op for op in operands if op.__class__ is not Scalar]
    if shape is None:
        shape = out.shape if out is not None else _broadcast_shape(arrays)
    if out is None:
        out = empty(runtime, shape, out_dtype)
    collapsed, strides = collapse(shape, [broadcast_strides(a, shape) for a in arrays]
                                  + [broadcast_strides(out, shape)])
    ndim = len(collapsed)
    rows = by_rows(runtime, collapsed)
    key = (runtime.index, expr, helpers, out_dtype, ndim, rows,
           tuple((op.dtype, isinstance(op, Scalar)) for op in operands))
    kernel = _KERNELS.get(key)
    if kernel is None:
        source, scalar_dtypes = _source(expr, operands, out_dtype, ndim, rows, helpers)
        kernel = _KERNELS[key] = runtime.programs.kernel(source, "ember_map", scalar_dtypes)
    args = []
    at = 0
    for op in operands:
        if isinstance(op, Scalar):
            args.append(scalar_arg(op.value, op.dtype))
            continue
        args += [op.buffer, op.offset, *strides[at]]
        at += 1
    size = math.prod(shape)
    args += [out.buffer, out.offset, *strides[at], size, *collapsed]
    launch(runtime, kernel, collapsed, size, args, rows)
    return out
