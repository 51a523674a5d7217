"""Reductions (work-group tree reductions along any dims) and scans (one work-item per fiber).

Complex values (float2/double2 pairs) sum as vectors do, part by part; their products call the codegen's
complex multiplication, from the identity 1 + 0i.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import CLArray, empty
from ..cltypes import STORAGE_CTYPE, compute_ctype, load, store
from ._source import complex_call, complex_helpers, group_size

SERIAL_BELOW = 64  # reductions this short, over many outputs, run one work-item per output
# On a CPU device every reduction with this many outputs per compute unit runs one work-item per output:
# neighbouring outputs' loops vectorize across work-items, where a tree form pays a barrier per level.
CPU_SERIAL_OUTPUTS = 16
_ACCUMULATOR_DTYPES = {"float": np.float32, "double": np.float64, "uchar": np.uint8, "char": np.int8,
                       "short": np.int16, "int": np.int32, "long": np.int64, "float2": np.complex64,
                       "double2": np.complex128}
_FLOAT_EXTREMA = {"float": ("-INFINITY", "INFINITY"), "double": ("-INFINITY", "INFINITY")}
_INT_EXTREMA = {"uchar": ("0", "UCHAR_MAX"), "char": ("CHAR_MIN", "CHAR_MAX"), "short": ("SHRT_MIN", "SHRT_MAX"),
                "int": ("INT_MIN", "INT_MAX"), "long": ("LONG_MIN", "LONG_MAX")}


def _extrema(ctype: str) -> tuple[str, str]:
    return _FLOAT_EXTREMA.get(ctype) or _INT_EXTREMA[ctype]


def _combine(kind: str, ctype: str) -> tuple[str, str]:
    """(initial value, C expression combining accumulators ``a`` and ``b``) for a value reduction."""
    if ctype in ("float2", "double2"):
        return _complex_combine(kind, np.dtype(_ACCUMULATOR_DTYPES[ctype]))
    floating = ctype in ("float", "double")
    if kind == "sum":
        return "0", "a + b"
    if kind == "prod":
        return "1", "a * b"
    low, high = _extrema(ctype)
    if kind == "max":
        return low, ("(isnan(a) || a > b) ? a : b" if floating else "a > b ? a : b")
    if kind == "min":
        return high, ("(isnan(a) || a < b) ? a : b" if floating else "a < b ? a : b")
    raise ValueError(kind)


def _complex_combine(kind: str, dtype: np.dtype) -> tuple[str, str]:
    """``_combine`` of complex sums and products (complex numbers have no max or min)."""
    if kind == "sum":
        return "0", "a + b"
    if kind == "prod":
        return f"(({STORAGE_CTYPE[dtype]})(1, 0))", complex_call("mul", dtype, "a", "b")
    raise ValueError(f"{kind} of complex values")


def _better(kind: str, floating: bool) -> str:
    """C condition: candidate (bv, bi) replaces the current (av, ai) in argmax/argmin (first index wins)."""
    ahead = "bv > av" if kind == "max" else "bv < av"
    if floating:
        return (f"((isnan(bv) && !isnan(av)) || (!isnan(av) && {ahead}) || "
                f"((bv == av || (isnan(av) && isnan(bv))) && bi < ai))")
    return f"({ahead} || (bv == av && bi < ai))"


def _offsets(prefix: str, ndim: int, linear: str, base: str) -> str:
    """C statements: {base} += the strided offset of ``linear`` over dims {prefix}d*/{prefix}s*.
    The outermost dim takes what is left of ``linear`` with no remainder (``linear`` lies in range),
    so a single dim is one multiply, which keeps the loops over it vectorizable."""
    if ndim == 0:
        return ""
    lines = [f"long {prefix}q = {linear};"]
    for d in range(ndim - 1, 0, -1):
        lines.append(f"{base} += ({prefix}q % {prefix}d{d}) * {prefix}s{d}; {prefix}q /= {prefix}d{d};")
    lines.append(f"{base} += {prefix}q * {prefix}s0;")
    return "\n    ".join(lines)


_KERNELS: dict = {}


def _reduce_kernel(runtime, kind: str, arg: bool, in_dtype: np.dtype, acc: str, out_dtype: np.dtype,
                   kept: int, reduced: int, serial: bool):
    """A reduction kernel. Tree form: one work-group per output, the group size and its local scratch
    are arguments, so one kernel serves every size. Serial form (short reductions, many outputs): one
    work-item per output loops over its elements, with no barriers."""
    key = (runtime.index, kind, arg, in_dtype, acc, out_dtype, kept, reduced, serial)
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    params = [f"__global const {STORAGE_CTYPE[in_dtype]} *a", "const long a_o"]
    params += [f"const long kd{d}, const long ks{d}" for d in range(kept)]
    params += [f"const long rd{d}, const long rs{d}" for d in range(reduced)]
    params += ["const long R", f"__global {STORAGE_CTYPE[out_dtype]} *out"]
    scalar_dtypes = [None, np.int64] + [np.int64] * (2 * kept + 2 * reduced) + [np.int64, None]
    if serial:
        params.append("const long outputs")
        scalar_dtypes.append(np.int64)
    else:
        params += ([f"__local {acc} *vals", "__local long *idxs"] if arg else [f"__local {acc} *scratch"])
        scalar_dtypes += [None, None] if arg else [None]
    floating = acc in ("float", "double")
    defines = ""
    if arg:
        init = _extrema(acc)[0 if kind == "max" else 1]
        body = f"""
    {acc} av = {init}; long ai = LONG_MAX;
    for (long t = lid; t < R; t += group) {{
        long off = base;
        {_offsets("r", reduced, "t", "off")}
        const {acc} bv = {load(in_dtype, "a", "off")}; const long bi = t;
        if (ai == LONG_MAX || {_better(kind, floating)}) {{ av = bv; ai = bi; }}
    }}"""
        body += "\n    out[o] = ai == LONG_MAX ? 0 : ai;" if serial else f"""
    vals[lid] = av; idxs[lid] = ai;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = group / 2; s > 0; s >>= 1) {{
        if (lid < s) {{
            const {acc} bv = vals[lid + s]; const long bi = idxs[lid + s];
            av = vals[lid]; ai = idxs[lid];
            if (bi != LONG_MAX && (ai == LONG_MAX || {_better(kind, floating)})) {{ vals[lid] = bv; idxs[lid] = bi; }}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) out[o] = idxs[0] == LONG_MAX ? 0 : idxs[0];"""
    else:
        init, combine = _combine(kind, acc)
        defines = f"{complex_helpers(in_dtype)}#define COMBINE(a, b) ({combine})\n"
        body = f"""
    {acc} acc = {init};
    for (long t = lid; t < R; t += group) {{
        long off = base;
        {_offsets("r", reduced, "t", "off")}
        const {acc} a_ = acc, b_ = {load(in_dtype, "a", "off")};
        acc = COMBINE(a_, b_);
    }}"""
        body += f"\n    {store(out_dtype, 'out', 'o', 'acc')}" if serial else f"""
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = group / 2; s > 0; s >>= 1) {{
        if (lid < s) {{ const {acc} a_ = scratch[lid], b_ = scratch[lid + s]; scratch[lid] = COMBINE(a_, b_); }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) {{ {store(out_dtype, "out", "o", "scratch[0]")} }}"""
    where = ("const long o = get_global_id(0);\n    EMBER_GUARD(o, outputs)\n    const int lid = 0, group = 1;"
             if serial else
             "const long o = get_group_id(0);\n    const int lid = get_local_id(0), group = get_local_size(0);")
    source = defines + f"""
__kernel void ember_reduce({', '.join(params)})
{{
    {where}
    long base = a_o;
    {_offsets("k", kept, "o", "base")}
{body}
}}
"""
    kernel = _KERNELS[key] = runtime.programs.kernel(source, "ember_reduce", scalar_dtypes)
    return kernel


def reduce(a: CLArray, dims, keepdim: bool, kind: str, out_dtype: np.dtype | None = None,
           arg: bool = False) -> CLArray:
    """Reduce ``a`` over ``dims`` (None: all) with ``kind`` in sum/prod/max/min; ``arg``: the index."""
    runtime = a.runtime
    if isinstance(dims, int):
        dims = (dims,)
    dims = tuple(range(a.ndim)) if dims is None else tuple(d % max(a.ndim, 1) for d in dims)
    if a.ndim == 0:
        dims = ()
    kept_dims = [d for d in range(a.ndim) if d not in dims]
    reduced_dims = [d for d in range(a.ndim) if d in dims]
    out_shape = tuple(1 if d in dims else a.shape[d] for d in range(a.ndim)) if keepdim else \
        tuple(a.shape[d] for d in kept_dims)
    out_dtype = np.dtype(np.int64) if arg else (out_dtype or a.dtype)
    out = empty(runtime, out_shape, out_dtype)
    outputs = math.prod(a.shape[d] for d in kept_dims)
    count = math.prod(a.shape[d] for d in reduced_dims)
    if outputs == 0:
        return out
    acc = compute_ctype(a.dtype)
    serial = (count <= SERIAL_BELOW and outputs >= runtime.max_group) or \
        (runtime.is_cpu and outputs >= CPU_SERIAL_OUTPUTS * runtime.device.max_compute_units)
    kernel = _reduce_kernel(runtime, kind, arg, a.dtype, acc, out_dtype, len(kept_dims), len(reduced_dims), serial)
    args = [a.buffer, a.offset]
    for d in kept_dims:
        args += [a.shape[d], a.strides[d]]
    for d in reduced_dims:
        args += [a.shape[d], a.strides[d]]
    args += [count, out.buffer]
    if serial:
        runtime.launch(kernel, outputs, *args, outputs)
        return out
    import pyopencl as cl  # (not at import time: Ember imports without PyOpenCL)
    group = group_size(runtime, count)
    width = np.dtype(_ACCUMULATOR_DTYPES[acc]).itemsize
    args += ([cl.LocalMemory(group * width), cl.LocalMemory(group * 8)] if arg else [cl.LocalMemory(group * width)])
    runtime.launch_groups(kernel, outputs, group, *args)
    return out


def _accumulating(kind: str):
    def kernel(a, dim, keepdim, dtype=None):
        return reduce(a, dim, keepdim, kind)
    return kernel


def _extremum(kind: str):
    def kernel(a, dim, keepdim):
        return reduce(a, dim, keepdim, kind)
    return kernel


def _arg(kind: str):
    def kernel(a, dim, keepdim):
        if dim is None:
            out = reduce(a, None, False, kind, arg=True)
            return out.view_as((1,) * a.ndim, (0,) * a.ndim) if keepdim else out
        return reduce(a, (dim,), keepdim, kind, arg=True)
    return kernel


def _scan_kernel(runtime, kind: str, in_dtype: np.dtype, others: int):
    key = (runtime.index, "scan", kind, in_dtype, others)
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    acc = compute_ctype(in_dtype)
    op = "+" if kind == "sum" else "*"
    value = load(in_dtype, "a", "src + j * a_step")
    init, step = ("0" if kind == "sum" else "1"), f"total {op} {value}"
    if in_dtype.kind == "c" and kind == "prod":  # (complex sums add as vectors do)
        init = _complex_combine(kind, in_dtype)[0]
        step = complex_call("mul", in_dtype, "total", value)
    params = [f"__global const {STORAGE_CTYPE[in_dtype]} *a", "const long a_o", "const long n", "const long a_step",
              "const long out_step"]
    params += [f"const long fd{d}, const long fs{d}, const long fo{d}" for d in range(others)]
    params += ["const long fibers", f"__global {STORAGE_CTYPE[in_dtype]} *out"]
    scalar_dtypes = [None] + [np.int64] * (4 + 3 * others) + [np.int64, None]
    walk = ["long q = f;"] + [f"src += (q % fd{d}) * fs{d}; dst += (q % fd{d}) * fo{d}; q /= fd{d};"
                              for d in range(others - 1, -1, -1)]
    source = complex_helpers(in_dtype) + f"""
__kernel void ember_scan({', '.join(params)})
{{
    const long f = get_global_id(0);
    if (f >= fibers) return;
    long src = a_o, dst = 0;
    {' '.join(walk) if others else ''}
    {acc} total = {init};
    for (long j = 0; j < n; ++j) {{
        total = {step};
        {store(in_dtype, "out", "dst + j * out_step", "total")}
    }}
}}
"""
    kernel = _KERNELS[key] = runtime.programs.kernel(source, "ember_scan", scalar_dtypes)
    return kernel


def _scan(kind: str):
    def kernel(a, dim, dtype=None):
        runtime = a.runtime
        out = empty(runtime, a.shape, a.dtype)
        if a.ndim == 0:
            a, out_view, dim = a.view_as((1,), (1,)), out.view_as((1,), (1,)), 0
        else:
            out_view = out
        others = [d for d in range(a.ndim) if d != dim]
        fibers = int(np.prod([a.shape[d] for d in others])) if others else 1
        if a.size == 0:
            return out
        args = [a.buffer, a.offset, a.shape[dim], a.strides[dim], out_view.strides[dim]]
        for d in others:
            args += [a.shape[d], a.strides[d], out_view.strides[d]]
        args += [fibers, out.buffer]
        runtime.launch(_scan_kernel(runtime, kind, a.dtype, len(others)), fibers, *args)
        return out
    return kernel


def any_true(a: CLArray) -> bool:
    """Whether any element is non-zero: a reduction, then a (synchronizing) read of one byte."""
    if a.size == 0:
        return False
    flag = reduce(a, None, False, "max")
    return bool(a.runtime.read_scalar(flag))


KERNELS = {
    "sum": _accumulating("sum"), "prod": _accumulating("prod"),
    "amax": _extremum("max"), "amin": _extremum("min"),
    "argmax": _arg("max"), "argmin": _arg("min"),
    "cumsum": _scan("sum"), "cumprod": _scan("prod"),
}
