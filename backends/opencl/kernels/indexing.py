"""Indexing on the device: gather, scatter, scatter_add, advanced indexing (index, index_put_) and
argwhere, plus the composites flip and index_select as single kernels.

Indices arrive validated and non-negative (each op's normalize wraps them), of any integer dtype;
kernels read them as ``long``. Every kernel returns a fresh contiguous array except ``index_put_``,
which writes into its first argument.

Writes that may name one position more than once (scatter, scatter_add, index_put_) are made
deterministic without atomics: one work-item owns a set of output positions no other work-item
can touch, and goes over the index positions that name them in row-major order, so duplicates keep
the last value (as NumPy's assignment does) or add up in NumPy's ``add.at`` order. index_put_ with
many index positions on a GPU first sorts them (stably) by the position they name, so that work is
spread over the distinct positions; the result is bit-identical either way.

Kernels are specialized on rank and dtypes only; shapes, strides and offsets are arguments.
"""
from __future__ import annotations

import math

import numpy as np

from .. import strided
from ..array import CLArray, empty
from ..cltypes import compute_ctype, convert, load, store
from ..strided import broadcast_strides, collapse
from ._source import LONG, Params, cached, dot, group_size, names, overlaps, split
from .sorting import sort_1d
from .shapes import clone


def _at_least_1d(a: CLArray) -> CLArray:
    return a.view_as((1,), (0,)) if a.ndim == 0 else a


def _read_index(name: str, base: str, coords: list[str], strides: list[str]) -> str:
    return f"(long){name}[{dot(base, coords, strides)}]"


def _index_terms(p, index_dtypes: tuple, coords: list, stride: str) -> list[str]:
    """Add each index tensor's parameters (buffer, offset, strides, step) to ``p``; return the C terms
    ``index_k[at coords] * step_k`` whose sum is the element offset the indices select."""
    terms = []
    for k, idt in enumerate(index_dtypes):
        strides = names(f"x{k}_{stride}", len(coords))
        p.buffer(f"x{k}", idt).longs(f"x{k}_o", *strides, f"step{k}")
        terms.append(f"{_read_index(f'x{k}', f'x{k}_o', coords, strides)} * step{k}")
    return terms


def _per_position(name: str, p: Params, dims: list[str], coords: list[str], body: str) -> str:
    """The source of kernel ``name``: one work-item per position ``g < n`` of the index space ``dims``,
    which it splits into ``coords`` before running ``body`` (take, scatter and index_put_ share this)."""
    return f"""
__kernel void {name}({p.text()})
{{
    const long g = get_global_id(0);
    if (g >= n) return;
    {split("g", dims, coords, "r")}
{body}
}}
"""


def _write(dtype: np.dtype, buffer: str, at: str, value: str, accumulate: bool) -> str:
    """C storing ``value`` to ``buffer[at]``, or adding it to what is there."""
    return store(dtype, buffer, at, f"{load(dtype, buffer, at)} + {value}" if accumulate else value)


# -- take: out[g] = a[a_pos(g) + sum_k ix_k[ix_k_pos(g)] * step_k] -----------------------------------

def _take_kernel(runtime, dtype: np.dtype, index_dtypes: tuple, rank: int):
    def build():
        dims, coords = names("d", rank), names("i", rank)
        p = Params().buffer("a", dtype).longs("a_o", *names("a_s", rank))
        terms = _index_terms(p, index_dtypes, coords, "s")
        p.buffer("out", dtype, const=False).longs("n", *dims)
        source = _per_position("ember_take", p, dims, coords, f"""\
    const long off = {dot("a_o", coords, names("a_s", rank))} + {" + ".join(terms)};
    {store(dtype, "out", "g", load(dtype, "a", "off"))}""")
        return source, "ember_take", p.dtypes
    return cached(runtime, ("take", dtype, index_dtypes, rank), build)


def _take(a: CLArray, out_shape: tuple, a_strides: tuple, indices: list, index_strides: list,
          steps: list) -> CLArray:
    """A new array of ``out_shape`` gathered through the index arrays (strides over out's dims)."""
    runtime = a.runtime
    out = empty(runtime, out_shape, a.dtype)
    size = out.size
    if size == 0:
        return out
    shape, strides = collapse(out_shape, [tuple(a_strides)] + [tuple(s) for s in index_strides])
    rank = len(shape)
    kernel = _take_kernel(runtime, a.dtype, tuple(ix.dtype for ix in indices), rank)
    args = [a.buffer, a.offset, *strides[0]]
    for ix, ix_strides, step in zip(indices, strides[1:], steps):
        args += [ix.buffer, ix.offset, *ix_strides, step]
    args += [out.buffer, size, *shape]
    runtime.launch(kernel, size, *args)
    return out


def _gather(a, dim, index):
    source, idx = _at_least_1d(a), _at_least_1d(index)
    dim %= source.ndim
    a_strides = list(source.strides)
    step, a_strides[dim] = a_strides[dim], 0
    out = _take(source, idx.shape, tuple(a_strides), [idx], [idx.strides], [step])
    return out.view_as(index.shape, None) if index.ndim == 0 else out


# -- scatter, scatter_add: one work-item per fiber along dim ------------------------------------------

def _scatter_kernel(runtime, dtype: np.dtype, index_dtype: np.dtype, src_dtype: np.dtype, rank: int,
                    accumulate: bool):
    def build():
        dims, coords = names("d", rank), names("i", rank)
        p = Params().buffer("out", dtype, const=False).longs("out_o", *names("out_s", rank), "out_step")
        p.buffer("ix", index_dtype).longs("ix_o", *names("ix_s", rank), "ix_step")
        p.buffer("src", src_dtype).longs("src_o", *names("src_s", rank), "src_step")
        p.longs("length", "n", *dims)
        source = _per_position("ember_scatter", p, dims, coords, f"""\
    const long ob = {dot("out_o", coords, names("out_s", rank))};
    const long ib = {dot("ix_o", coords, names("ix_s", rank))};
    const long sb = {dot("src_o", coords, names("src_s", rank))};
    for (long k = 0; k < length; ++k) {{
        const long p = ob + (long)ix[ib + k * ix_step] * out_step;
        {_write(dtype, "out", "p", load(src_dtype, "src", "sb + k * src_step"), accumulate)}
    }}""")
        return source, "ember_scatter", p.dtypes
    return cached(runtime, ("scatter", dtype, index_dtype, src_dtype, rank, accumulate), build)


def _scatter(accumulate: bool):
    def kernel(a, dim, index, src):
        out = clone(a)
        if index.size == 0:
            return out
        target, idx = _at_least_1d(out), _at_least_1d(index)
        rank = target.ndim
        dim %= rank
        if src.ndim == 0:  # a number: the same value everywhere
            src = src.view_as((1,) * rank, (0,) * rank)
        fiber = idx.shape[:dim] + (1,) + idx.shape[dim + 1:]
        shape, (so, si, ss) = collapse(fiber, [target.strides, idx.strides, src.strides])
        fibers = math.prod(fiber)
        runtime = a.runtime
        kern = _scatter_kernel(runtime, out.dtype, idx.dtype, src.dtype, len(shape), accumulate)
        runtime.launch(kern, fibers, target.buffer, target.offset, *so, target.strides[dim],
                       idx.buffer, idx.offset, *si, idx.strides[dim], src.buffer, src.offset, *ss, src.strides[dim],
                       idx.shape[dim], fibers, *shape)
        return out
    return kernel


# -- advanced indexing ------------------------------------------------------------------------------

def _layout(a: CLArray, indices: list):
    """(advanced dims, broadcast index shape, out layout): layout lists ("a", input dim) and ("b", k)."""
    advanced = [d for d, ix in enumerate(indices) if ix is not None]
    broadcast = tuple(np.broadcast_shapes(*(indices[d].shape for d in advanced)))
    kept = [("a", d) for d in range(a.ndim) if d not in advanced]
    b_dims = [("b", k) for k in range(len(broadcast))]
    if advanced == list(range(advanced[0], advanced[-1] + 1)):
        layout = kept[:advanced[0]] + b_dims + kept[advanced[0]:]
    else:
        layout = b_dims + kept
    return advanced, broadcast, layout


def _index(a, indices):
    indices = list(indices)
    if all(ix is None for ix in indices):
        return clone(a)
    advanced, broadcast, layout = _layout(a, indices)
    out_shape = tuple(a.shape[x] if kind == "a" else broadcast[x] for kind, x in layout)
    a_strides = tuple(a.strides[x] if kind == "a" else 0 for kind, x in layout)
    index_arrays, index_strides = [], []
    for d in advanced:
        ix = indices[d]
        bs = broadcast_strides(ix, broadcast)
        index_arrays.append(ix)
        index_strides.append(tuple(bs[x] if kind == "b" else 0 for kind, x in layout))
    return _take(a, out_shape, a_strides, index_arrays, index_strides, [a.strides[d] for d in advanced])


def _put_kernel(runtime, dtype: np.dtype, values_dtype: np.dtype, index_dtypes: tuple, rank: int, brank: int,
                accumulate: bool):
    def build():
        dims, coords = names("d", rank), names("i", rank)
        bdims, bcoords = names("e", brank), names("j", brank)
        p = Params().buffer("a", dtype, const=False).longs("a_o", *names("a_s", rank))
        p.buffer("v", values_dtype).longs("v_o", *names("v_s", rank), *names("v_t", brank))
        terms = []
        for k, idt in enumerate(index_dtypes):
            p.buffer(f"x{k}", idt).longs(f"x{k}_o", *names(f"x{k}_t", brank), f"step{k}")
            terms.append(f"{_read_index(f'x{k}', f'x{k}_o', bcoords, names(f'x{k}_t', brank))} * step{k}")
        p.longs("n", *dims, "nb", *bdims)
        source = _per_position("ember_index_put", p, dims, coords, f"""\
    const long base = {dot("a_o", coords, names("a_s", rank))};
    const long vbase = {dot("v_o", coords, names("v_s", rank))};
    for (long b = 0; b < nb; ++b) {{
        {split("b", bdims, bcoords, "q")}
        const long off = base + {" + ".join(terms)};
        const long vo = {dot("vbase", bcoords, names("v_t", brank))};
        {_write(dtype, "a", "off", load(values_dtype, "v", "vo"), accumulate)}
    }}""")
        return source, "ember_index_put", p.dtypes
    return cached(runtime, ("index_put", dtype, values_dtype, index_dtypes, rank, brank, accumulate), build)


def _keys_kernel(runtime, index_dtypes: tuple, brank: int):
    def build():
        bdims, bcoords = names("e", brank), names("j", brank)
        p = Params()
        terms = _index_terms(p, index_dtypes, bcoords, "t")
        p.buffer("keys", LONG, const=False).longs("nb", *bdims)
        source = f"""
__kernel void ember_put_keys({p.text()})
{{
    const long b = get_global_id(0);
    if (b >= nb) return;
    {split("b", bdims, bcoords, "q")}
    keys[b] = {" + ".join(terms)};
}}
"""
        return source, "ember_put_keys", p.dtypes
    return cached(runtime, ("put_keys", index_dtypes, brank), build)


def _segments_kernel(runtime, dtype: np.dtype, values_dtype: np.dtype, rank: int, brank: int, accumulate: bool):
    def build():
        dims, coords = names("d", rank), names("i", rank)
        bdims, bcoords = names("e", brank), names("j", brank)
        p = Params().buffer("a", dtype, const=False).longs("a_o", *names("a_s", rank))
        p.buffer("v", values_dtype).longs("v_o", *names("v_s", rank), *names("v_t", brank))
        p.buffer("keys", LONG).buffer("perm", LONG).longs("n", *dims, "nb", *bdims)
        at = f"{dot('vbase', bcoords, names('v_t', brank))}"
        if accumulate:  # the sum rounds to dtype at every step, as a loop of a[off] += v does
            ctype = compute_ctype(dtype)
            total = f"acc + {load(values_dtype, 'v', at)}"
            if dtype == np.float16:
                step = f"{store(dtype, 'a', 'off', total)} acc = {load(dtype, 'a', 'off')};"
            elif dtype == np.bool_:
                step = f"acc = (uchar)(({total}) != 0);"
            else:
                step = f"acc = ({ctype})({total});"
            body = f"""
    {ctype} acc = {load(dtype, "a", "off")};
    for (long t = s; t < nb && keys[t] == key; ++t) {{
        {split("perm[t]", bdims, bcoords, "q")}
        {step}
    }}
    {store(dtype, "a", "off", "acc")}"""
        else:
            body = f"""
    long t = s;
    while (t + 1 < nb && keys[t + 1] == key) ++t;
    {split("perm[t]", bdims, bcoords, "q")}
    {store(dtype, "a", "off", load(values_dtype, "v", at))}"""
        source = f"""
__kernel void ember_put_segments({p.text()})
{{
    const long g = get_global_id(0);
    if (g >= n * nb) return;
    const long s = g / n;
    const long key = keys[s];
    if (s > 0 && keys[s - 1] == key) return;
    {split("g % n", dims, coords, "r")}
    const long off = {dot("a_o", coords, names("a_s", rank))} + key;
    const long vbase = {dot("v_o", coords, names("v_s", rank))};
{body}
}}
"""
        return source, "ember_put_segments", p.dtypes
    return cached(runtime, ("put_segments", dtype, values_dtype, rank, brank, accumulate), build)


#: from this many index positions on, index_put_ on a GPU sorts them by target position (parallel over
#: distinct positions) instead of looping over all of them in each work-item; both give bit-identical
#: results. A CPU device has few cores, which the looping work-items already keep busy.
SORTED_PUT_MIN = 4096
SORTED_PUT_MAX_ITEMS = 32768  # ... unless the non-indexed dims already give this many work-items
FORCE_SORTED_PUT = False  # tests set it to check the sorted path on any device


def _sorted_put(runtime, n: int, nb: int) -> bool:
    if FORCE_SORTED_PUT:
        return True
    import pyopencl as cl
    gpu = bool(runtime.device.type & cl.device_type.GPU)
    return gpu and nb >= SORTED_PUT_MIN and n < SORTED_PUT_MAX_ITEMS


def _index_put_(a, indices, values, accumulate):
    """Deterministic for repeated positions: each target position is written by one work-item, which
    goes over the index positions that name it in row-major order (last wins, or sums in that order).

    Few index positions: one work-item per position of the dims that are not indexed, looping over all
    index positions. Many: the index positions are stably sorted by the target offset they name, and
    one work-item per (run of equal offsets, non-indexed position) handles its run.
    """
    indices = list(indices)
    if all(ix is None for ix in indices):  # self[...] = values (accumulate: +=)
        if overlaps(a, values):
            values = clone(values)
        expr = "x0 + x1" if accumulate else "x1"
        strided.run(a.runtime, expr, [a, values], a.dtype, out=a)
        return a
    advanced, broadcast, layout = _layout(a, indices)
    target = tuple(a.shape[x] if kind == "a" else broadcast[x] for kind, x in layout)
    if math.prod(target) == 0:
        return a
    if overlaps(a, values):
        values = clone(values)
    index_arrays = [clone(indices[d]) if overlaps(a, indices[d]) else indices[d] for d in advanced]
    vs = broadcast_strides(values, target)
    kept = [pos for pos, (kind, _) in enumerate(layout) if kind == "a"]
    b_pos = [pos for pos, (kind, _) in enumerate(layout) if kind == "b"]
    shape, (sa, sv) = collapse(tuple(target[pos] for pos in kept),
                               [tuple(a.strides[layout[pos][1]] for pos in kept), tuple(vs[pos] for pos in kept)])
    bshape, bstrides = collapse(broadcast, [tuple(vs[pos] for pos in b_pos)]
                                + [broadcast_strides(ix, broadcast) for ix in index_arrays])
    runtime = a.runtime
    index_dtypes = tuple(ix.dtype for ix in index_arrays)
    n, nb = math.prod(shape), math.prod(bshape)
    index_args = []
    for ix, ix_strides, d in zip(index_arrays, bstrides[1:], advanced):
        index_args += [ix.buffer, ix.offset, *ix_strides, a.strides[d]]
    head = [a.buffer, a.offset, *sa, values.buffer, values.offset, *sv, *bstrides[0]]
    if not _sorted_put(runtime, n, nb):
        kernel = _put_kernel(runtime, a.dtype, values.dtype, index_dtypes, len(shape), len(bshape), bool(accumulate))
        runtime.launch(kernel, n, *head, *index_args, n, *shape, nb, *bshape)
        return a
    keys = empty(runtime, (nb,), LONG)
    runtime.launch(_keys_kernel(runtime, index_dtypes, len(bshape)), nb, *index_args, keys.buffer, nb, *bshape)
    keys, perm = sort_1d(keys)
    kernel = _segments_kernel(runtime, a.dtype, values.dtype, len(shape), len(bshape), bool(accumulate))
    runtime.launch(kernel, n * nb, *head, keys.buffer, perm.buffer, n, *shape, nb, *bshape)
    return a


# -- argwhere: count per work-group, scan the counts, then write in order -----------------------------

_PER_ITEM = 8  # elements each work-item looks at per work-group


def _local_scan(G: str = "G") -> str:
    """C statements: inclusive prefix sum of scratch[0..G) in place (Hillis-Steele), all items taking part."""
    return f"""barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = 1; s < {G}; s <<= 1) {{
            const long add = lid >= s ? scratch[lid - s] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            scratch[lid] += add;
            barrier(CLK_LOCAL_MEM_FENCE);
        }}"""


def _nonzero(dtype: np.dtype, value: str) -> str:
    """C condition: ``value`` (an element of ``dtype``) is non-zero; a complex one in either part."""
    return convert(value, dtype, np.dtype(np.bool_)) if dtype.kind == "c" else f"{value} != 0"


def _compact_kernel(runtime, dtype: np.dtype, rank: int):
    def build():
        dims, coords, again = names("d", rank), names("i", rank), names("c", rank)
        p = Params().buffer("a", dtype).longs("a_o", *names("a_s", rank), *dims, "n", "per_item", "write")
        p.buffer("prefix", LONG, const=False).buffer("out", LONG, const=False).local("scratch", "long")
        writes = " ".join(f"out[row + {d}] = {c};" for d, c in enumerate(again))
        source = f"""
__kernel void ember_compact({p.text()})
{{
    const long grp = get_group_id(0);
    const int lid = get_local_id(0);
    const int G = get_local_size(0);
    const long start = grp * per_item * G;
    long running = write ? prefix[grp] : 0;
    long mine = 0;
    for (long k = 0; k < per_item; ++k) {{
        const long e = start + k * G + lid;
        long flag = 0;
        if (e < n) {{
            {split("e", dims, coords, "r")}
            flag = {_nonzero(dtype, load(dtype, "a", dot("a_o", coords, names("a_s", rank))))};
        }}
        if (!write) {{ mine += flag; continue; }}
        scratch[lid] = flag;
        {_local_scan()}
        if (flag) {{
            const long row = (running + scratch[lid] - 1) * {rank};
            {split("e", dims, again, "t")}
            {writes}
        }}
        running += scratch[G - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (!write) {{
        scratch[lid] = mine;
        {_local_scan()}
        if (lid == 0) prefix[grp] = scratch[G - 1];
    }}
}}
"""
        return source, "ember_compact", p.dtypes
    return cached(runtime, ("compact", dtype, rank), build)


def _scan_counts_kernel(runtime):
    def build():
        p = Params().buffer("c", LONG, const=False).longs("m").local("scratch", "long")
        source = f"""
__kernel void ember_scan_counts({p.text()})
{{
    const int lid = get_local_id(0);
    const int G = get_local_size(0);
    const long per = (m + G - 1) / G;
    const long lo = min(lid * per, m), hi = min(lo + per, m);
    long total = 0;
    for (long k = lo; k < hi; ++k) total += c[k];
    scratch[lid] = total;
    {_local_scan()}
    long run = scratch[lid] - total;
    for (long k = lo; k < hi; ++k) {{ const long v = c[k]; c[k] = run; run += v; }}
    if (lid == G - 1) c[m] = scratch[G - 1];
}}
"""
        return source, "ember_scan_counts", p.dtypes
    return cached(runtime, ("scan_counts",), build)


def _argwhere(a):
    import pyopencl as cl
    runtime = a.runtime
    rank = a.ndim
    n = a.size
    if n == 0:
        return empty(runtime, (0, rank), LONG)
    group = group_size(runtime, n)
    per_item = min(_PER_ITEM, -(-n // group))
    groups = -(-n // (group * per_item))
    prefix = empty(runtime, (groups + 1,), LONG)
    kernel = _compact_kernel(runtime, a.dtype, rank)
    head = [a.buffer, a.offset, *a.strides, *a.shape, n, per_item]
    scratch = cl.LocalMemory(8 * group)
    runtime.launch_groups(kernel, groups, group, *head, 0, prefix.buffer, prefix.buffer, scratch)
    scan_group = group_size(runtime, groups)
    runtime.launch_groups(_scan_counts_kernel(runtime), 1, scan_group, prefix.buffer, groups,
                          cl.LocalMemory(8 * scan_group))
    count = int(runtime.read_scalar(prefix.view_as((), (), groups)))
    out = empty(runtime, (count, rank), LONG)
    if count and rank:
        runtime.launch_groups(kernel, groups, group, *head, 1, prefix.buffer, out.buffer, scratch)
    return out


# -- overrides of composites -------------------------------------------------------------------------

def _flip(a, dims):
    """A copy through a view with negated strides: one strided copy for any number of dims."""
    if a.ndim == 0 or not dims or a.size == 0:
        return clone(a)
    strides, offset = list(a.strides), a.offset
    for d in dims:
        offset += (a.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return clone(a.view_as(a.shape, tuple(strides), offset))


def _index_select(a, dim, index):
    if a.ndim == 0:
        return clone(a)
    flat = index.view_as((index.size,), (index.strides[0] if index.ndim else 0,))
    return _index(a, [None] * dim + [flat])


KERNELS = {
    "gather": _gather,
    "scatter": _scatter(False),
    "scatter_add": _scatter(True),
    "index": _index,
    "index_put_": _index_put_,
    "argwhere": _argwhere,
    # overrides of composites
    "flip": _flip,
    "index_select": _index_select,
}
