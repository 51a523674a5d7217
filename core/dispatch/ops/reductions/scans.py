"""Scans with an associative step: cummax, cummin and logcumsumexp.

Each runs as a Hillis-Steele scan: log2(n) rounds, each combining every element with the one ``2^r``
places before it, so a scan is a few dozen whole-tensor ops on any backend instead of n small ones.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import int64
from ...schema.meta import shape
from ...schema import Sample, defop
from ..namespace import F


def _earlier(t, dim: int, offset: int):
    """``t`` shifted ``offset`` places later along dim: position i holds t[i - offset] (its first ``offset``
    positions repeat the start; the scans mask them out)."""
    length = t.shape[dim]
    return F.cat([F.slice(t, dim, 0, offset), F.slice(t, dim, 0, length - offset)], dim)


def _positions(t, dim: int):
    return F.reshape(F.arange(t.shape[dim], device=t.device), (-1,) + (1,) * (t.ndim - dim - 1))


def _scan(dim: int, state: tuple, combine):
    """Hillis-Steele: ``combine(earlier, later) -> state`` over every prefix along dim."""
    first = state[0]
    positions = _positions(first, dim)
    offset = 1
    while offset < first.shape[dim]:
        has_earlier = F.ge(positions, offset)
        merged = combine(tuple(_earlier(s, dim, offset) for s in state), state)
        state = tuple(F.where(has_earlier, m, s) for m, s in zip(merged, state))
        offset *= 2
    return state


def _extremum_scan(better):
    """cummax/cummin: a later element replaces the running one where it is NaN, or neither is NaN and it is
    ``better`` or equal (so ties and NaN take the latest index, as PyTorch)."""
    def composite(x, dim):
        if x.ndim == 0:
            return F.clone(x), F.zeros_like(x, dtype=int64)
        indices = F.expand(_positions(x, dim), tuple(x.shape))

        def combine(earlier, later):
            (value_a, index_a), (value_b, index_b) = earlier, later
            takes_later = F.logical_or(better(value_b, value_a), F.eq(value_b, value_a))
            if x.dtype.is_floating_point:
                takes_later = F.logical_or(F.isnan(value_b),
                                           F.logical_and(F.logical_not(F.isnan(value_a)), takes_later))
            return F.where(takes_later, value_b, value_a), F.where(takes_later, index_b, index_a)
        return _scan(dim, (x, indices), combine)
    return composite


def _extremum_scan_reference(better):
    def row(values):
        out_values, out_indices = np.empty_like(values), np.empty(values.shape, np.int64)
        best, at = values[0], 0
        for i, v in enumerate(values):
            if v != v or (best == best and (better(v, best) or v == best)):
                best, at = v, i
            out_values[i], out_indices[i] = best, at
        return out_values, out_indices

    def reference(x, dim):
        x = np.asarray(x)
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        moved = np.moveaxis(x, dim, -1)
        if not moved.size:
            return x.copy(), np.zeros(x.shape, np.int64)
        pairs = [row(r) for r in moved.reshape(-1, moved.shape[-1])]
        values = np.array([v for v, _ in pairs], dtype=x.dtype).reshape(moved.shape)
        indices = np.array([i for _, i in pairs], dtype=np.int64).reshape(moved.shape)
        return np.moveaxis(values, -1, dim), np.moveaxis(indices, -1, dim)
    return reference


def _scatter_back(grads, input, dim, results):
    """Each output's gradient goes to the element it took its value from (summed where several did)."""
    if input.ndim == 0:
        return grads[0]
    return F.scatter_add(F.zeros_like(input, dtype=grads[0].dtype), dim, results[1], grads[0])


def _scan_samples(make, dtype):
    yield Sample((make((3, 6)), 1), note="dim=1")
    yield Sample((make((5, 2), noncontiguous=True), 0), note="dim=0, non-contiguous")
    yield Sample((make((2, 3, 9)), -1), note="9 long: four rounds")
    yield Sample((make(()), 0), note="0-d")
    if dtype.is_floating_point:
        yield Sample((make.specials((12,)), 0), note="NaN and infinities")


def _pair_meta(x, dim):
    return shape(x), shape(x)


defop("cummax(Tensor input, dim dim)", "reduction", kind="composite", promotion=rules.with_indices,
      outputs=("values", "indices"), meta=_pair_meta, composite=_extremum_scan(lambda a, b: F.gt(a, b)),
      derivative=_scatter_back, samples=_scan_samples, reference=_extremum_scan_reference(lambda a, b: a > b),
      doc="running maximum along dim and the index it was taken from (the latest of ties); NaN propagates")
defop("cummin(Tensor input, dim dim)", "reduction", kind="composite", promotion=rules.with_indices,
      outputs=("values", "indices"), meta=_pair_meta, composite=_extremum_scan(lambda a, b: F.lt(a, b)),
      derivative=_scatter_back, samples=_scan_samples, reference=_extremum_scan_reference(lambda a, b: a < b),
      doc="running minimum along dim and the index it was taken from (the latest of ties); NaN propagates")


def _logcumsumexp(x, dim):
    if x.ndim == 0:
        return F.clone(x)
    out, = _scan(dim, (x,), lambda earlier, later: (F.logaddexp(earlier[0], later[0]),))
    return out


def _complex_logcumsumexp(x, dim):
    """PyTorch's value for complex input, the principal log of the running sums of exp, shifted by the largest real
    part along dim (so exp cannot overflow); each step records its own node."""
    if x.ndim == 0:
        return F.clone(x)
    peak = F.amax(F.real(x), dim, True)
    peak = F.where(F.isinf(peak), F.zeros_like(peak), peak)
    return F.add(F.log(F.cumsum(F.exp(F.sub(x, peak)), dim)), peak)


def _logcumsumexp_reference(x, dim):
    if np.iscomplexobj(x):
        return np.log(np.cumsum(np.exp(x), axis=dim)) if np.ndim(x) else np.array(x)
    x = np.asarray(x, np.float64)
    return np.logaddexp.accumulate(x, axis=dim) if x.ndim else x.copy()


defop("logcumsumexp(Tensor input, dim dim)", "reduction", kind="composite", promotion=rules.same,
      dtypes="float+complex", complex_decomposition=_complex_logcumsumexp,
      meta=lambda x, dim: shape(x), composite=_logcumsumexp, reference=_logcumsumexp_reference,
      samples=_scan_samples,
      doc="log(cumsum(exp(input))) along dim, without overflow or underflow (pairwise logaddexp)")
