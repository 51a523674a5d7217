"""nn composites the OpenCL backend runs as one kernel of its own: pad (every mode).

Core's pad assembles the result from slices and ``cat``: several kernels and copies per padded dim.
Here each output element finds its source element directly, so any padding is one gather.
"""
from __future__ import annotations

from ..array import CLArray, empty
from ..cltypes import arg_dtype, compute_ctype, load, scalar_arg, store
from ._source import Params, cached, dot, names, split

# How an output coordinate s (already shifted by the padding before it) maps into the input along a
# dim of n elements; constant mode instead marks the element as outside.
_SOURCE = {
    "constant": "inside = inside && s{d} >= 0 && s{d} < n{d};",
    "reflect": "s{d} = s{d} < 0 ? -s{d} : (s{d} >= n{d} ? 2 * (n{d} - 1) - s{d} : s{d});",
    "replicate": "s{d} = s{d} < 0 ? 0 : (s{d} >= n{d} ? n{d} - 1 : s{d});",
    # circular crops first (c{d} elements from the front, leaving m{d}), then wraps
    "circular": "s{d} = c{d} + ((s{d} % m{d}) + m{d}) % m{d};",
}


def _pad_kernel(runtime, dtype, mode: str, rank: int):
    def build():
        dims, coords = names("d", rank), names("i", rank)
        p = Params().buffer("a", dtype).longs("a_o", *names("a_s", rank))
        p.longs(*[f"{x}{d}" for d in range(rank) for x in ("n", "b", "c", "m")])
        p.buffer("out", dtype, const=False).longs("total", *dims)
        p.decls.append(f"const {compute_ctype(dtype)} value")
        p.dtypes.append(arg_dtype(dtype))
        shifts = "\n    ".join(f"long s{d} = i{d} - b{d}; {_SOURCE[mode].format(d=d)}" for d in range(rank))
        source = f"""
__kernel void ember_pad({p.text()})
{{
    const long g = get_global_id(0);
    EMBER_GUARD(g, total)
    {split("g", dims, coords, "r")}
    bool inside = true;
    {shifts}
    {store(dtype, "out", "g", "inside ? " + load(dtype, "a", dot("a_o", names("s", rank), names("a_s", rank))) + " : value")}
}}
"""
        return source, "ember_pad", p.dtypes
    return cached(runtime, ("pad", dtype, mode, rank), build)


def _pad(a: CLArray, pad, mode="constant", value=None):
    rank = a.ndim
    before, after = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        before[rank - 1 - k], after[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    shape = tuple(n + b + e for n, b, e in zip(a.shape, before, after))
    out = empty(a.runtime, shape, a.dtype)
    if out.size == 0:
        return out
    per_dim = []
    for n, b, e in zip(a.shape, before, after):
        crop = max(-b, 0)
        kept = max(n - crop - max(-e, 0), 1)
        # circular wraps within the cropped run, so its shift is relative to the crop
        per_dim += [n, max(b, 0) if mode == "circular" else b, crop, kept]
    kernel = _pad_kernel(a.runtime, a.dtype, mode, rank)
    fill = scalar_arg(0 if value is None else value, a.dtype)
    a.runtime.launch(kernel, out.size, a.buffer, a.offset, *a.strides, *per_dim, out.buffer, out.size, *shape,
                     fill)
    return out


KERNELS = {"pad": _pad}
