"""Reorderings of the elements: flip, roll, tril, triu and diff, composed of indexing, slices and cat."""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...execution.dispatcher import wrap_dim
from ...schema.dtypes import bool_
from ...schema.errors import ArgumentError, OutOfRangeError, describe
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from .._shared import _is_tensor, _with_size
from ..onnx_support import INT64_MIN, rank


# -- reorderings: flip, roll, tril, triu, diff --------------------------------------------------

def _wrap_dims(op_name: str, dims, ndim: int) -> tuple:
    return tuple(wrap_dim(op_name, d, ndim) for d in dims)


def _flip_normalize(op, args):
    dims = _wrap_dims("flip", args["dims"], len(shape(args["input"])))
    if len(set(dims)) != len(dims):
        raise ArgumentError(f"flip: dims {args['dims']} name a dimension more than once")
    args["dims"] = dims


def _flip_onnx(g, input, dims):
    """Slice with step -1 from the last element to before the first."""
    if not dims or not rank(g, input):
        return g.op("Identity", input)
    count = len(dims)
    return g.op("Slice", input, g.ints([-1] * count), g.ints([INT64_MIN] * count), g.ints(list(dims)),
                g.ints([-1] * count))


def _flip(x, dims):
    if x.ndim == 0 or not dims:
        return F.clone(x)
    for d in dims:
        x = F.index(x, [None] * d + [F.arange(x.shape[d] - 1, -1, -1, device=x.device)])
    return x


def _flip_samples(make, dtype):
    yield Sample((make((3, 4, 5)), (0, -1)))
    yield Sample((make((3, 4), noncontiguous=True), (1,)))
    yield Sample((make((2, 0)), (0, 1)), note="empty")
    yield Sample((make(()), (0,)), note="0-d")
    yield Sample((make((3,)), ()), note="no dims: a copy")


defop("flip(Tensor input, int[] dims)", "indexing", kind="composite", promotion=rules.passthrough,
      meta=lambda x, dims: shape(x), normalize=_flip_normalize, composite=_flip, onnx=_flip_onnx,
      reference=lambda x, dims: np.flip(x, tuple(dims)).copy() if x.ndim else x.copy(), samples=_flip_samples,
      doc="a copy with the order of the elements reversed along dims")


def _roll_normalize(op, args):
    x, shifts, dims = args["input"], args["shifts"], args["dims"]
    if dims is not None and len(dims) == 0:  # no dims: the flattened tensor, as dims=None (PyTorch's reading)
        dims = args["dims"] = None
    if dims is None:
        require(len(shifts) == 1, "roll", f"without dims, shifts must be one number, got {shifts}", x)
        return
    require(len(shifts) == len(dims) and len(shifts) > 0, "roll",
            f"shifts {shifts} and dims {dims} must have the same, non-zero length", x)
    if not shape(x):
        raise OutOfRangeError(f"roll: a 0-d tensor has no dims to roll along; dims {dims} ({describe(x)})")
    args["dims"] = _wrap_dims("roll", dims, len(shape(x)))


def _roll_along(x, shift, dim):
    n = x.shape[dim]
    shift = shift % n if n else 0
    if not shift:
        return x
    return F.cat([F.slice(x, dim, n - shift), F.slice(x, dim, 0, n - shift)], dim)


def _roll(x, shifts, dims=None):
    if dims is None:
        return F.reshape(_roll(F.reshape(x, (-1,)), shifts, (0,)), tuple(x.shape))
    out = x
    for shift, dim in zip(shifts, dims):
        out = _roll_along(out, shift, dim)
    return F.clone(out) if out is x else out


def _roll_samples(make, dtype):
    yield Sample((make((3, 4)), (1, -6), (0, 1)))
    yield Sample((make((3, 4), noncontiguous=True), (2,)), note="flattened")
    yield Sample((make((3, 4)), (1, 2), (1, 1)), note="one dim twice")
    yield Sample((make((0, 4)), (1,), (0,)), note="empty")
    yield Sample((make(()), (3,)), note="0-d")


defop("roll(Tensor input, int[] shifts, int[]? dims=None)", "indexing", kind="composite",
      promotion=rules.passthrough, meta=lambda x, shifts, dims=None: shape(x), normalize=_roll_normalize,
      composite=_roll, samples=_roll_samples,
      reference=lambda x, shifts, dims=None: np.roll(x, shifts[0] if dims is None else tuple(shifts), axis=dims),
      doc="elements shifted cyclically along dims (the flattened tensor without dims)")


def _triangle(name, keep):
    def composite(x, diagonal=0):
        rows = F.unsqueeze(F.arange(x.shape[-2], device=x.device), 1)
        columns = F.arange(x.shape[-1], device=x.device)
        inside = keep(F.sub(columns, rows), diagonal)
        return F.where(inside, x, F.zeros((), dtype=x.dtype, device=x.device))

    def meta(x, diagonal=0):
        require(len(shape(x)) >= 2, name, "input must have at least 2 dimensions", x)
        return shape(x)

    def samples(make, dtype):
        yield Sample((make((4, 5)),))
        yield Sample((make((2, 5, 4), noncontiguous=True), -1), note="batched, below the diagonal")
        yield Sample((make((3, 3)), 2))
        yield Sample((make((0, 3)), 0), note="empty")

    def lower(g, input, diagonal=0):
        return g.op("Trilu", input, g.scalar(diagonal), upper=int(name == "triu"))

    reference = getattr(np, name)
    defop(f"{name}(Tensor input, int diagonal=0)", "indexing", kind="composite", promotion=rules.passthrough,
          onnx=lower,
          meta=meta, composite=composite, reference=lambda x, diagonal=0: reference(x, diagonal), inplace=True,
          samples=samples, doc=f"the {'lower' if name == 'tril' else 'upper'} triangle of the last two dims "
                               f"(from diagonal), zeros elsewhere")


_triangle("tril", lambda offset, diagonal: F.le(offset, diagonal))
_triangle("triu", lambda offset, diagonal: F.ge(offset, diagonal))


def _diff_normalize(op, args):
    x, n, dim, prepend, append = args["input"], args["n"], args["dim"], args["prepend"], args["append"]
    require(len(shape(x)) >= 1, "diff", "input must have at least one dimension", x)
    if n < 0:
        raise ArgumentError(f"diff: n must be non-negative, got {n}")
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        require(_is_tensor(extra) and len(shape(extra)) == len(shape(x)), "diff",
                f"{name} must be a tensor with as many dimensions as input", x, extra)
        require(all(a == b for d, (a, b) in enumerate(zip(shape(extra), shape(x))) if d != dim), "diff",
                f"{name}'s shape must match input's except along dim {dim}", x, extra)


def _diff_meta(x, n=1, dim=-1, prepend=None, append=None):
    length = sum(shape(t)[dim] for t in (prepend, x, append) if t is not None)
    return _with_size(shape(x), dim, max(length - n, 0))


def _diff(x, n=1, dim=-1, prepend=None, append=None):
    pieces = [t for t in (prepend, x, append) if t is not None]
    out = F.cat(pieces, dim) if len(pieces) > 1 else x
    for _ in range(min(n, out.shape[dim])):  # past the length every further difference is empty too
        later, earlier = F.slice(out, dim, 1), F.slice(out, dim, 0, -1)
        out = F.ne(later, earlier) if out.dtype is bool_ else F.sub(later, earlier)
    return F.clone(out) if out is x else out


def _diff_reference(x, n=1, dim=-1, prepend=None, append=None):
    pieces = [t for t in (prepend, x, append) if t is not None]
    return np.diff(np.concatenate(pieces, axis=dim) if len(pieces) > 1 else x, n, axis=dim)


def _diff_samples(make, dtype):
    yield Sample((make((6,)),))
    yield Sample((make((3, 5), noncontiguous=True), 2, 0), note="second difference along dim 0")
    yield Sample((make((3, 4)), 1, -1, make((3, 2)), make((3, 1))), note="prepend and append")
    yield Sample((make((2, 3)), 5), note="n beyond the length")
    yield Sample((make((2, 3)), 0), note="n = 0")
    yield Sample((make((0, 3)), 1, 0), note="empty")


defop("diff(Tensor input, int n=1, dim dim=-1, Tensor? prepend=None, Tensor? append=None)", "indexing",
      kind="composite", promotion=rules.same, meta=_diff_meta, normalize=_diff_normalize, composite=_diff,
      dtypes="all+complex", reference=_diff_reference, samples=_diff_samples,
      doc="the n-th forward difference along dim (logical xor for bool), after joining prepend and append")
