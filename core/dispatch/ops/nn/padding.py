"""The pad op (constant, reflect, replicate, circular), with its derivative and ONNX lowering.

It declares its derivative, so training runs the backends' fast forward kernel and a few whole-tensor ops
backward instead of recording the decomposition's many small ones.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.errors import ArgumentError, ShapeError
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from ..onnx_support import INT64_MAX


# -- pad ---------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_pairs(pad: tuple) -> list:
    """PyTorch's flat pad list (last dim first) -> [(dim offset from the end, before, after), ...]."""
    return [(k + 1, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]


def _pad_normalize(op, args):
    x, pad, mode, value = args["input"], args["pad"], args["mode"], args["value"]
    ndim = len(shape(x))
    if len(pad) % 2:
        raise ArgumentError(f"pad: the padding length must be divisible by 2, got pad={pad}")
    if len(pad) // 2 > ndim:
        raise ArgumentError(f"pad: pad={pad} pads {len(pad) // 2} dimension(s) but the input of shape "
                            f"{shape(x)} has only {ndim}")
    if mode not in _PAD_MODES:
        raise ArgumentError(f"pad: unknown mode {mode!r}; expected one of {', '.join(_PAD_MODES)}")
    if mode != "constant":
        if value is not None and value != 0:
            raise ArgumentError(f"pad: mode {mode!r} doesn't take a value argument, got value={value}")
        k = len(pad) // 2
        if not 1 <= k <= 3 or ndim not in (k + 1, k + 2):
            raise ShapeError(f"pad: mode {mode!r} with {len(pad)} padding values pads the last {k} dim(s) of a "
                             f"{k + 1}-D or {k + 2}-D input, got input of shape {shape(x)}")
        if mode != "circular" and not all(shape(x)[-k - 1:]):
            raise ShapeError(f"pad: mode {mode!r} needs non-empty channel and padded dims (only the batch dim may "
                             f"be empty), got input of shape {shape(x)}")


def _pad_meta(x, pad, mode="constant", value=None):
    out = list(shape(x))
    for back, before, after in _pad_pairs(pad):
        size = out[-back]
        if mode == "reflect":
            require(before < size and after < size, "pad",
                    f"reflect padding {(before, after)} must be smaller than the padded dimension's size {size}", x)
        if mode == "circular":
            cropped = size - max(-before, 0) - max(-after, 0)
            require(before <= cropped and after <= cropped, "pad",
                    f"circular padding {(before, after)} wraps around more than once "
                    f"(dimension of size {size})", x)
        require(size + before + after >= 0, "pad",
                f"padding {(before, after)} would give dim {len(out) - back} a negative size", x)
        out[-back] = size + before + after
    return tuple(out)


def _pad_constant(x, dim: int, before: int, after: int, value):
    if before < 0 or after < 0:  # negative padding crops
        x = F.slice(x, dim, max(-before, 0), x.shape[dim] - max(-after, 0))
    pieces = [x]
    for width, front in ((before, True), (after, False)):
        if width > 0:
            filler_shape = tuple(width if d == dim else s for d, s in enumerate(x.shape))
            filler = F.full(filler_shape, value, dtype=x.dtype, device=x.device)
            pieces.insert(0 if front else len(pieces), filler)
    return F.cat(pieces, dim) if len(pieces) > 1 else x


def _edge_pieces(x, dim: int, before: int, after: int, mode: str):
    """The slabs to put before and after x along dim for the reflect, replicate and circular modes."""
    size = x.shape[dim]
    if mode == "replicate":
        def edge(i, width):
            slab = F.slice(x, dim, i, i + 1)
            return F.expand(slab, tuple(width if d == dim else s for d, s in enumerate(slab.shape)))
        return ([edge(0, before)] if before > 0 else []), ([edge(size - 1, after)] if after > 0 else [])
    if mode == "circular":
        return ([F.slice(x, dim, size - before, size)] if before > 0 else []), \
               ([F.slice(x, dim, 0, after)] if after > 0 else [])
    # reflect: mirrored around the first and last element, without repeating them; no flip op needed
    front = [F.slice(x, dim, i, i + 1) for i in range(before, 0, -1)]
    back = [F.slice(x, dim, i, i + 1) for i in range(size - 2, size - 2 - after, -1)]
    return front, back


def _pad(x, pad, mode="constant", value=None):
    for back, before, after in _pad_pairs(pad):
        dim = x.ndim - back
        if mode == "constant":
            x = _pad_constant(x, dim, before, after, 0.0 if value is None else value)
            continue
        if mode == "circular":  # circular crops first and wraps the cropped tensor, like PyTorch
            x = _pad_constant(x, dim, min(before, 0), min(after, 0), 0.0)
            before, after = max(before, 0), max(after, 0)
        # reflect and replicate read their slabs from the uncropped input, then crop
        front, end = _edge_pieces(x, dim, max(before, 0), max(after, 0), mode)
        if front or end:
            x = F.cat(front + [x] + end, dim)
        if before < 0 or after < 0:
            x = F.slice(x, dim, max(-before, 0), x.shape[dim] - max(-after, 0))
    return x


def _pad_reference(x, pad, mode="constant", value=None):
    """Index arithmetic per padded dim: which source element each output position reads."""
    for back, before, after in _pad_pairs(tuple(pad)):
        axis = x.ndim - back
        size = x.shape[axis]
        if mode == "circular":
            start, stop = max(-before, 0), size - max(-after, 0)
            x = np.take(x, np.arange(start, stop), axis=axis)
            size, before, after = stop - start, max(before, 0), max(after, 0)
        source = np.arange(-before, size + after)
        if mode == "constant":
            inside = (source >= 0) & (source < size)
            taken = np.take(x, np.clip(source, 0, max(size - 1, 0)), axis=axis) if size else \
                np.zeros(x.shape[:axis] + (len(source),) + x.shape[axis + 1:], x.dtype)
            mask = inside.reshape((-1,) + (1,) * (x.ndim - axis - 1))
            x = np.where(mask, taken, 0 if value is None else value).astype(x.dtype)
            continue
        if mode == "reflect":
            source = np.abs(source)
            source = np.where(source >= size, 2 * (size - 1) - source, source)
        elif mode == "replicate":
            source = np.clip(source, 0, size - 1)
        else:
            source = source % size
        x = np.take(x, source, axis=axis)
    return x


def _pad_samples(make, dtype):
    yield Sample((make((2, 3, 4)), (1, 2)))
    yield Sample((make((2, 3, 4)), (1, 0, 0, 2)), {"value": 3.0})
    yield Sample((make((2, 5, 6), noncontiguous=True), (-1, 2, 2, -2)), note="negative padding crops")
    yield Sample((make((3,)), (0, 0)))
    yield Sample((make((2, 3, 4)), (0, 0, 0, 0, 1, 1)), note="padding the first dim")
    if dtype.is_floating_point:
        for mode in ("reflect", "replicate", "circular"):
            yield Sample((make((2, 3, 5)), (2, 3)), {"mode": mode})
            yield Sample((make((1, 2, 4, 5)), (1, 2, 3, 0)), {"mode": mode})
            yield Sample((make((4, 5)), (-1, 2)), {"mode": mode}, note="negative padding")
            yield Sample((make((1, 2, 3, 3, 4)), (1, 1, 1, 2, 2, 1)), {"mode": mode})


def _pad_sources(grad, dim: int, before: int, after: int, mode: str):
    """Which input element each output position along dim reads, for the reflect, replicate and circular
    modes (``_pad_reference``'s index arithmetic, in Ember ops on grad's device)."""
    size = grad.shape[dim] - before - after  # the input's size along dim
    if mode == "circular":  # crops first, then wraps the cropped range
        start = max(-before, 0)
        kept = size - start - max(-after, 0)
        wrapped = F.remainder(F.arange(-max(before, 0), kept + max(after, 0), device=grad.device), kept)
        return F.add(wrapped, start)
    source = F.arange(-before, size + after, device=grad.device)
    if mode == "replicate":
        return F.clamp(source, 0, size - 1)
    source = F.abs(source)  # reflect: mirrored around the first and the last element
    return F.where(F.ge(source, size), F.sub(2 * (size - 1), source), source)


def _pad_derivative(grad, pad, mode):
    """constant: the same pad negated, so padding is cropped off and crops come back as zeros. The other
    modes read some input elements several times: each padded dim sums its gradient back onto the
    elements it read (a scatter_add along that dim; the dims are independent, so their order is free)."""
    if mode == "constant":
        return F.pad(grad, tuple(-p for p in pad))
    for back, before, after in _pad_pairs(pad):
        dim = grad.ndim - back
        source = _pad_sources(grad, dim, before, after, mode)
        index = F.expand(F.reshape(source, (-1,) + (1,) * (back - 1)), tuple(grad.shape))
        size = grad.shape[dim] - before - after
        zeros = F.zeros(tuple(size if d == dim else s for d, s in enumerate(grad.shape)), dtype=grad.dtype,
                        device=grad.device)
        grad = F.scatter_add(zeros, dim, index, grad)
    return grad


def _pad_onnx(g, input, pad, mode, value):
    """Negative pads crop first (Slice), then Pad (constant, reflect, edge) or, for circular, Slice and Concat
    of the wrapped ends (ONNX's wrap mode is opset 19+); PyTorch crops before it reflects or wraps too."""
    rank = len(g.shape_of(input))
    begins, ends = [0] * rank, [0] * rank
    for back, before, after in _pad_pairs(g.static(pad, "pad")):
        begins[rank - back], ends[rank - back] = before, after
    x = input
    crops = [(d, -min(b, 0), min(e, 0)) for d, (b, e) in enumerate(zip(begins, ends)) if b < 0 or e < 0]
    if crops:
        x = g.op("Slice", x, g.ints([c[1] for c in crops]), g.ints([c[2] or INT64_MAX for c in crops]),
                 g.ints([c[0] for c in crops]))
    begins, ends = [max(b, 0) for b in begins], [max(e, 0) for e in ends]
    if not any(begins) and not any(ends):
        return g.op("Identity", x)
    if mode == "circular":
        for d, (b, e) in enumerate(zip(begins, ends)):
            if b or e:
                head = [g.op("Slice", x, g.ints([-b]), g.ints([INT64_MAX]), g.ints([d]))] if b else []
                tail = [g.op("Slice", x, g.ints([0]), g.ints([e]), g.ints([d]))] if e else []
                x = g.op("Concat", *head, x, *tail, axis=d)
        return x
    fill = g.const(0 if value is None else value, g.compute) if mode == "constant" else None
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}[mode]
    return g.op("Pad", x, g.ints(begins + ends), fill, mode=onnx_mode)


defop("pad(Tensor input, int[] pad, str mode='constant', float? value=None)", "nn", kind="composite",
      derivative={"input": _pad_derivative}, dtypes="all+complex",
      promotion=rules.same, meta=_pad_meta, normalize=_pad_normalize, composite=_pad,
      reference=_pad_reference, samples=_pad_samples, method=False, onnx=_pad_onnx,
      doc="pads (or with negative values crops) the last dims; pad lists (before, after) pairs from the last "
          "dim backwards; modes constant, reflect, replicate and circular as in PyTorch")
