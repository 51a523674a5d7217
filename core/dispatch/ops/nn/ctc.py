"""The connectionist temporal classification loss (``ctc_loss``), a composite of Ember ops.

For each sequence the loss is ``-log p(target | log_probs)``, summed over every alignment of the target
(labels possibly repeated, blanks between) with the ``input_length`` time steps. It is computed by the
forward (alpha) recursion in log space over the extended target ``blank l1 blank l2 ... lS blank``,
vectorised over the batch and over the extended positions, one step per time step; autograd differentiates
the recursion. A log-probability of -inf would make the log-sum-exp's derivative NaN, so the impossible
states hold a very negative finite number instead, and a target that no alignment can produce (fewer time
steps than labels plus repeated neighbours) is given an infinite loss explicitly, as PyTorch's.
"""
from __future__ import annotations

import math

import numpy as np

from ...execution.dispatcher import note_value_read
from ...schema.dtypes import int64
from ...schema.errors import EmberError, ShapeError
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from .losses import check_reduction
from ..elementwise.opmath import in_opmath

_IMPOSSIBLE = -1.0e30  # log-probability of an unreachable state: exp() of it is 0, its derivative finite


def _padded_targets(targets, target_lengths, batch: int):
    """Targets as ``(N, S)``: the padded form as it is, the concatenated 1-D form split by the lengths."""
    if targets.ndim == 2:
        return targets
    note_value_read()
    lengths = [int(n) for n in target_lengths.tolist()]
    longest = max(lengths, default=0)
    rows, start = [], 0
    for n in lengths:
        row = targets[start:start + n]
        start += n
        rows.append(F.cat([row, F.zeros((longest - n,), dtype=targets.dtype, device=targets.device)], 0))
    if not rows:
        return F.zeros((batch, 0), dtype=targets.dtype, device=targets.device)
    return F.stack(rows, 0)


def _logsumexp3(a, b, c):
    return F.logsumexp(F.stack([a, b, c], 0), 0)


def _shifted(values, by: int, fill):
    """``values`` moved ``by`` positions right along the last dim, ``fill`` entering on the left."""
    batch, width = shape(values)
    pad = F.full((batch, min(by, width)), fill, dtype=values.dtype, device=values.device)
    return F.cat([pad, values[:, :width - by]], 1) if width > by else pad[:, :width]


def _ctc_losses(log_probs, targets, input_lengths, target_lengths, blank: int):
    """One loss per sequence, ``(N,)``, for batched ``log_probs (T, N, C)`` and targets ``(N, S)``."""
    steps, batch, _ = shape(log_probs)
    labels = targets.to(int64)
    longest = shape(labels)[1]
    width = 2 * longest + 1
    lengths = target_lengths.to(int64)
    position = F.arange(width, dtype=int64, device=log_probs.device)
    label_index = F.clamp(F.div(F.sub(position, 1), 2, rounding_mode="floor"), 0, max(longest - 1, 0))
    odd = F.eq(F.remainder(position, 2), 1)
    in_target = F.lt(F.unsqueeze(position, 0), F.unsqueeze(F.add(F.mul(lengths, 2), 1), 1))  # (N, width)
    if longest:
        gathered = F.gather(labels, 1, F.expand(F.unsqueeze(label_index, 0), (batch, width)))
        extended = F.where(F.logical_and(odd, in_target), gathered, blank)
        skip = F.logical_and(F.logical_and(odd, in_target),
                             F.ne(extended, _shifted(extended, 2, blank)))  # l'_s != blank and != l'_{s-2}
        repeats = F.sum(F.logical_and(F.eq(labels[:, 1:], labels[:, :-1]),
                                      F.lt(F.unsqueeze(F.arange(1, longest, dtype=int64, device=labels.device), 0),
                                           F.unsqueeze(lengths, 1))).to(int64), 1)
    else:
        extended = F.full((batch, width), blank, dtype=int64, device=log_probs.device)
        skip = F.zeros((batch, width), dtype=F.eq(position, 0).dtype, device=log_probs.device)
        repeats = F.zeros((batch,), dtype=int64, device=log_probs.device)
    first_two = F.lt(F.unsqueeze(position, 0), F.minimum(F.add(F.mul(lengths, 2), 1), 2).unsqueeze(1))
    emissions = [F.gather(log_probs[t], 1, extended) for t in range(steps)]
    impossible = F.full((batch, width), _IMPOSSIBLE, dtype=log_probs.dtype, device=log_probs.device)
    alpha = F.where(first_two, emissions[0], impossible) if steps else impossible
    input_lengths = input_lengths.to(int64)
    for t in range(1, steps):
        from_skip = F.where(skip, _shifted(alpha, 2, _IMPOSSIBLE), impossible)
        advanced = F.add(_logsumexp3(alpha, _shifted(alpha, 1, _IMPOSSIBLE), from_skip), emissions[t])
        alpha = F.where(F.unsqueeze(F.gt(input_lengths, t), 1), advanced, alpha)  # finished sequences hold
    last = F.unsqueeze(F.mul(lengths, 2), 1)
    end_blank = F.gather(alpha, 1, last)
    end_label = F.where(F.gt(last, 0), F.gather(alpha, 1, F.clamp(F.sub(last, 1), 0, None)), _IMPOSSIBLE)
    losses = F.neg(F.logsumexp(F.cat([end_blank, end_label], 1), 1))
    unreachable = F.logical_or(F.lt(input_lengths, F.add(lengths, repeats)), F.eq(input_lengths, 0))
    return F.where(unreachable, math.inf, losses)


def _check_values(log_probs, targets, input_lengths, target_lengths) -> None:
    """PyTorch's checks of the lengths, and the targets' range, which PyTorch leaves unchecked (an out-of-range
    label would read another sequence's memory there; here it is an error). Reads the values."""
    note_value_read()
    steps, classes = shape(log_probs)[0], shape(log_probs)[-1]
    inputs = [int(n) for n in F.reshape(input_lengths, (-1,)).tolist()]
    lengths = [int(n) for n in F.reshape(target_lengths, (-1,)).tolist()]
    if any(n < 0 or n > steps for n in inputs):
        raise EmberError(f"ctc_loss: expected input_lengths to have values in [0, {steps}] (the length T of "
                         f"log_probs {shape(log_probs)}), got {inputs}")
    if any(n < 0 for n in lengths):
        raise EmberError(f"ctc_loss: target_lengths must be non-negative, got {lengths}")
    if targets.ndim == 2 or (log_probs.ndim == 2 and targets.ndim == 1):
        width = shape(targets)[-1]
        if any(n > width for n in lengths):
            raise ShapeError(f"ctc_loss: a target length of {max(lengths)} exceeds the padded targets' width "
                             f"{width} (targets {shape(targets)})")
    elif sum(lengths) != shape(targets)[0]:
        raise ShapeError(f"ctc_loss: concatenated targets must hold sum(target_lengths) = {sum(lengths)} labels, "
                         f"got {shape(targets)[0]}")
    if targets.numel():
        low, high = int(F.amin(targets).item()), int(F.amax(targets).item())
        if low < 0 or high >= classes:
            raise EmberError(f"ctc_loss: target labels must be in [0, {classes}) for log_probs with {classes} "
                             f"classes, got values in [{low}, {high}]")


def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    _check_values(log_probs, targets, input_lengths, target_lengths)
    batched = log_probs.ndim == 3
    if not batched:
        log_probs = F.unsqueeze(log_probs, 1)
        targets = F.unsqueeze(targets, 0)
        input_lengths, target_lengths = F.reshape(input_lengths, (1,)), F.reshape(target_lengths, (1,))
    padded = _padded_targets(targets, target_lengths, shape(log_probs)[1])
    losses = _ctc_losses(log_probs, padded, input_lengths, target_lengths, blank)
    if zero_infinity:
        losses = F.where(F.isinf(losses), 0.0, losses)
    if reduction == "mean":
        return F.mean(F.div(losses, F.clamp(target_lengths.to(losses.dtype), 1, None)))
    if reduction == "sum":
        return F.sum(losses)
    return losses if batched else F.squeeze(losses, 0)


def _ctc_promotion(rt, op, args):
    dt = args["log_probs"].dtype
    return dt, dt


def _ctc_normalize(op, args) -> None:
    check_reduction(op.name, args["reduction"])
    if not isinstance(args["blank"], int) or isinstance(args["blank"], bool):
        raise EmberError(f"ctc_loss: blank must be an int, got {args['blank']!r}")


def _ctc_meta(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    dims = shape(log_probs)
    require(len(dims) in (2, 3), "ctc_loss", "log_probs must be (T, N, C) or unbatched (T, C)", log_probs)
    classes = dims[-1]
    if not 0 <= blank < classes:
        raise EmberError(f"ctc_loss: blank must be in label range [0, {classes}), got {blank}")
    batch = dims[1] if len(dims) == 3 else None
    lengths_shape = (batch,) if batch is not None else ()
    for label, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if shape(lengths) not in (lengths_shape, (1,) if batch is None else lengths_shape):
            raise ShapeError(f"ctc_loss: {label} must have shape {lengths_shape} (one length per sequence), got "
                             f"{shape(lengths)} for log_probs of shape {dims}")
    if batch is not None:
        require(len(shape(targets)) in (1, 2) and (len(shape(targets)) == 1 or shape(targets)[0] == batch),
                "ctc_loss", f"targets must be (N, S) with N = {batch} or the 1-D concatenation of the targets",
                targets, log_probs)
    else:
        require(len(shape(targets)) == 1, "ctc_loss", "unbatched targets must be 1-D (S,)", targets)
    return (batch,) if reduction == "none" and batch is not None else ()


def _ctc_reference(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                   zero_infinity=False):
    """The alpha recursion written out in NumPy, one sequence at a time, in float64."""
    lp = np.asarray(log_probs, dtype=np.float64)
    batched = lp.ndim == 3
    if not batched:
        lp, targets = lp[:, None], np.asarray(targets)[None]
    inputs = np.atleast_1d(np.asarray(input_lengths)).astype(int)
    lengths = np.atleast_1d(np.asarray(target_lengths)).astype(int)
    targets = np.asarray(targets).astype(int)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    losses = []
    for n in range(lp.shape[1]):
        label = targets[n, :lengths[n]] if targets.ndim == 2 else targets[starts[n]:starts[n] + lengths[n]]
        ext = [blank]
        for symbol in label:
            ext += [int(symbol), blank]
        alpha = np.full(len(ext), -np.inf)
        alpha[0] = lp[0, n, ext[0]] if inputs[n] else -np.inf
        if len(ext) > 1 and inputs[n]:
            alpha[1] = lp[0, n, ext[1]]
        for t in range(1, inputs[n]):
            new = np.full_like(alpha, -np.inf)
            for s in range(len(ext)):
                terms = [alpha[s]] + ([alpha[s - 1]] if s >= 1 else [])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    terms.append(alpha[s - 2])
                new[s] = np.logaddexp.reduce(terms) + lp[t, n, ext[s]]
            alpha = new
        loss = -np.logaddexp.reduce(alpha[-2:]) if inputs[n] else np.inf
        losses.append(0.0 if zero_infinity and np.isinf(loss) else loss)
    losses = np.array(losses)
    if reduction == "mean":
        return np.mean(losses / np.maximum(lengths, 1))
    if reduction == "sum":
        return np.sum(losses)
    return losses if batched else losses[0]


def _ctc_samples(make, dtype):
    def ints(shape_, low, high):
        return make(shape_, dtype=int64, low=low, high=high)
    # padded targets (N, S), every input long enough: T = 6 >= 2 * S
    yield Sample((make((6, 3, 4), low=-3.0, high=0.0), ints((3, 3), 1, 4), ints((3,), 5, 7), ints((3,), 1, 4)),
                 note="padded targets, mean")
    yield Sample((make((5, 2, 3), low=-3.0, high=0.0), ints((4,), 1, 3), ints((2,), 5, 6), ints((2,), 2, 3)),
                 {"reduction": "none"}, note="concatenated targets, none")
    yield Sample((make((4, 3), low=-3.0, high=0.0), ints((2,), 0, 2), ints((), 4, 5), ints((), 2, 3)),
                 {"blank": 2, "reduction": "sum"}, note="unbatched, blank=2, sum")
    yield Sample((make((2, 2, 3), low=-3.0, high=0.0), ints((2, 3), 1, 3), ints((2,), 1, 3), ints((2,), 3, 4)),
                 {"reduction": "none", "zero_infinity": True}, gradcheck=False,
                 note="targets too long for the inputs: infinite losses, zeroed")


defop("ctc_loss(Tensor log_probs, Index targets, Index input_lengths, Index target_lengths, int blank=0, "
      "str reduction='mean', bool zero_infinity=False)", "nn", kind="composite", promotion=_ctc_promotion,
      dtypes="float", meta=_ctc_meta, normalize=_ctc_normalize, composite=in_opmath(_ctc_loss),
      reference=_ctc_reference, samples=_ctc_samples, method=False, autocast="float32",
      doc="connectionist temporal classification loss: -log of the total probability of the target's "
          "alignments, by the alpha recursion in log space; 'mean' divides each loss by its target length")
