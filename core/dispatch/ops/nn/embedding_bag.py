"""``embedding_bag``: sums, means or maxima of bags of embedding rows, without materialising the looked-up
(bags, length, dim) tensor for sum and mean.

The indices form one flat list cut into bags by ``offsets`` (a 2-D input is bags of equal length). Each index
learns its bag from a cumulative count of the bag starts at or before it; the rows are looked up with the
``embedding`` op (so ``scale_grad_by_freq`` and ``padding_idx`` get its gradient rules) and summed per bag with
one ``index_add``. Max lays the rows out as (bags, longest bag, dim) with empty slots at -inf and takes the
maximum. Gradients come from autograd through these ops, dense (Ember has no sparse tensors).
"""
from __future__ import annotations

import math

import numpy as np

from ...execution.dispatcher import note_value_read
from ...schema.dtypes import int64
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from ...schema.errors import ArgumentError

_MODES = ("sum", "mean", "max")


def _normalize(op, args):
    """Checks the offsets and the indices against the table: this reads the data, as PyTorch does."""
    indices, offsets, weight = args["indices"], args["offsets"], args["weight"]
    if args["mode"] not in (0, 1, 2):
        raise ArgumentError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {args['mode']}")
    if args["per_sample_weights"] is not None and args["mode"] != 0:
        raise ArgumentError(f"embedding_bag: per_sample_weights is only supported for mode='sum' (got mode="
                            f"'{_MODES[args['mode']]}')")
    note_value_read()
    rows = shape(weight)[0] if len(shape(weight)) == 2 else 0
    if indices.numel():
        low, high = F.amin(indices).item(), F.amax(indices).item()
        if low < 0 or high >= rows:
            raise IndexError(f"embedding_bag: index {low if low < 0 else high} is out of range for a table of "
                             f"{rows} rows")
    if len(shape(indices)) == 1 and offsets.numel():
        first, last = F.select(offsets, 0, 0).item(), F.amax(offsets).item()
        if first != 0:
            raise ArgumentError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                                f"has to start from position 0; got {first}")
        if last > indices.numel():
            raise ArgumentError(f"embedding_bag: offsets[-1] can not be greater than input's length "
                                f"{indices.numel()} but got {last}")
        if F.any(F.lt(F.diff(offsets), 0)).item():
            raise ArgumentError("embedding_bag: offsets must be non-decreasing")
        if args["include_last_offset"] and F.select(offsets, 0, -1).item() != indices.numel():
            raise ArgumentError(f"embedding_bag: with include_last_offset=True the last offset must be the input's "
                                f"length {indices.numel()}, got {F.select(offsets, 0, -1).item()}")


def _bag_count(indices, offsets, include_last_offset: bool) -> int:
    if len(shape(indices)) == 2:
        return shape(indices)[0]
    return shape(offsets)[0] - (1 if include_last_offset else 0)


def _meta(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset,
          padding_idx):
    require(len(shape(weight)) == 2, "embedding_bag", "weight must be 2-D (num_embeddings, embedding_dim)", weight)
    require(len(shape(indices)) in (1, 2), "embedding_bag", "input must be 1-D (with offsets) or 2-D (bags of "
            "equal length)", indices)
    require(len(shape(offsets)) == 1, "embedding_bag", "offsets must be 1-D", offsets)
    if per_sample_weights is not None:
        require(shape(per_sample_weights) == shape(indices), "embedding_bag", "per_sample_weights must have the "
                "input's shape", indices, per_sample_weights)
    bags, dim = _bag_count(indices, offsets, include_last_offset), shape(weight)[1]
    require(bags >= 0, "embedding_bag", "include_last_offset needs at least one offset", offsets)
    count = math.prod(shape(indices))
    return (bags, dim), (count,), (bags,), ((bags, dim) if mode == 2 else (bags,))


def _promotion(rt, op, args):
    return rt, (rt, int64, int64, int64)


def _bags_of(indices, offsets, include_last_offset: bool):
    """(flat indices, the bag of each, the bag starts, the number of bags)."""
    if indices.ndim == 2:
        bags, length = indices.shape
        flat = F.reshape(indices, (-1,))
        starts = F.mul(F.arange(bags, device=indices.device), length)
    else:
        flat = indices
        starts = F.slice(offsets, 0, 0, offsets.shape[0] - 1) if include_last_offset else offsets
        bags = starts.shape[0]
    count = flat.shape[0]
    marks = F.scatter_add(F.zeros((count + 1,), dtype=int64, device=flat.device), 0, F.to_dtype(starts, int64),
                          F.ones((bags,), dtype=int64, device=flat.device))
    bag = F.sub(F.cumsum(F.slice(marks, 0, 0, count), 0), 1)
    return flat, bag, F.to_dtype(starts, int64), bags


def _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=None):
    flat, bag, starts, bags = _bags_of(indices, offsets, include_last_offset)
    dim = weight.shape[1]
    rows = F.embedding(flat, weight, padding_idx, scale_grad_by_freq)
    if per_sample_weights is not None:
        rows = F.mul(rows, F.unsqueeze(F.reshape(per_sample_weights, (-1,)), 1))
    kept = F.ones(tuple(flat.shape), dtype=int64, device=flat.device) if padding_idx is None else \
        F.to_dtype(F.ne(flat, padding_idx), int64)
    bag_size = F.index_add(F.zeros((bags,), dtype=int64, device=flat.device), 0, bag, kept)
    if mode == 2:
        return _max_outputs(rows, flat, bag, bags, kept, bag_size)
    if padding_idx is not None:
        rows = F.mul(rows, F.unsqueeze(F.to_dtype(kept, rows.dtype), 1))
    out = F.index_add(F.zeros((bags, dim), dtype=rows.dtype, device=rows.device), 0, bag, rows)
    if mode == 1:
        out = F.div(out, F.unsqueeze(F.to_dtype(F.clamp(bag_size, min=1), out.dtype), 1))
    return out, bag, bag_size, bag_size


def _max_outputs(rows, flat, bag, bags: int, kept, bag_size):
    """Rows laid out as (bags, longest bag, dim), empty and padding slots at -inf; the maximum of each column
    and the table row it came from (the first of ties). Empty bags give zeros."""
    count, dim = rows.shape
    ones = F.ones((count,), dtype=int64, device=rows.device)
    lengths = F.index_add(F.zeros((bags,), dtype=int64, device=rows.device), 0, bag, ones)
    longest = max(int(F.amax(lengths).item()) if bags else 0, 1)
    first_of_bag = F.sub(F.cumsum(lengths, 0), lengths)
    slot = F.add(F.mul(bag, longest), F.sub(F.arange(count, device=rows.device), F.index_select(first_of_bag, 0, bag)))
    present = F.gt(F.index_add(F.zeros((bags * longest,), dtype=int64, device=rows.device), 0, slot, kept), 0)
    laid = F.index_add(F.zeros((bags * longest, dim), dtype=rows.dtype, device=rows.device), 0, slot, rows)
    laid = F.reshape(F.where(F.unsqueeze(present, 1), laid, -math.inf), (bags, longest, dim))
    best = F.amax(laid, 1)
    owner = F.index_add(F.zeros((bags * longest,), dtype=int64, device=rows.device), 0, slot, flat)
    first = F.argmax(laid, 1)  # (bags, dim): the first slot holding the maximum
    max_indices = F.gather(F.reshape(owner, (bags, longest)), 1, first)
    empty = F.unsqueeze(F.eq(bag_size, 0), 1)
    return F.where(empty, 0.0, best), bag, bag_size, F.where(empty, 0, max_indices)


def _reference(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
               include_last_offset=False, padding_idx=None):
    """Bag by bag, member by member."""
    weight = np.asarray(weight, np.float64)
    flat = np.asarray(indices).ravel()
    scales = np.ones(len(flat)) if per_sample_weights is None else np.asarray(per_sample_weights, np.float64).ravel()
    if np.ndim(indices) == 2:
        starts = list(range(0, len(flat), np.shape(indices)[1]))
    else:
        starts = list(np.asarray(offsets)[:-1] if include_last_offset else np.asarray(offsets))
    ends = starts[1:] + [len(flat)]
    bags, dim = len(starts), weight.shape[1]
    out, bag_of = np.zeros((bags, dim)), np.zeros(len(flat), np.int64)
    sizes, chosen = np.zeros(bags, np.int64), np.zeros((bags, dim), np.int64)
    for b, (start, end) in enumerate(zip(starts, ends)):
        bag_of[start:end] = b
        members = [i for i in range(start, end) if flat[i] != padding_idx]
        sizes[b] = len(members)
        if not members:
            continue
        vectors = np.stack([weight[flat[i]] * scales[i] for i in members])
        if mode == 2:
            out[b] = vectors.max(0)
            chosen[b] = flat[np.asarray(members)[vectors.argmax(0)]]
        else:
            out[b] = vectors.sum(0) / (len(members) if mode == 1 else 1)
    return out, bag_of, sizes, (chosen if mode == 2 else sizes)


def _samples(make, dtype):
    device = make(()).device
    table = make((10, 3))
    index = lambda *s: make(s, dtype="int64", low=0, high=10)  # noqa: E731
    steps = lambda count, step, limit: F.clamp(F.mul(F.arange(count, device=device), step), max=limit)  # noqa: E731
    yield Sample((table, index(8), steps(3, 3, 8), False, 0, False, make((8,))), note="sum, per_sample_weights")
    yield Sample((table, index(8), steps(3, 4, 4), False, 1, False, None, False, 2), note="mean, empty bag, padding")
    yield Sample((table, index(3, 4), steps(3, 4, 12), False, 2), note="max, 2-D input")
    yield Sample((table, index(8), steps(4, 3, 8), False, 0, False, None, True), note="include_last_offset")


defop("embedding_bag(Tensor weight, Index indices, Index offsets, bool scale_grad_by_freq=False, int mode=0, "
      "bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int? padding_idx=None)",
      "nn", kind="composite", promotion=_promotion, dtypes="float", meta=_meta, normalize=_normalize,
      composite=_embedding_bag, reference=_reference, samples=_samples, method=False,
      outputs=("output", "offset2bag", "bag_size", "max_indices"),
      doc="per bag of indices (cut by offsets, or the rows of a 2-D input) the sum (mode 0), mean (1) or maximum "
          "(2) of the weight rows; padding_idx entries are left out. Also each index's bag, each bag's size and, "
          "for max, the row each maximum came from (else the sizes again). Gradients are dense.")
