"""``binomial(count, prob)``: one Binomial(count, prob) draw per (broadcast) element.

A composite over the uniform sampler, so it draws on the tensors' own device. Each element is drawn with
p' = min(p, 1 - p) (a draw for 1 - p is count minus a draw for p): where count * p' is small, by counting
geometric waiting times between successes (exact, about count * p' steps); from _SMALL_MEAN on, by
Hoermann's transformed rejection with squeeze (BTRS, 1993), whose acceptance test is the exact pmf ratio.
"""
from __future__ import annotations

from ...schema.errors import ArgumentError, DtypeError, describe
from ...schema.meta import broadcast_shapes, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from .random import precise_float, uniform_open_below
from .rejection_sampling import transformed_rejection
from ._shared import _flags

_SMALL_MEAN = 10.0


def _one_dtype(rt, op, args):
    """count and prob in one floating dtype, the result's: PyTorch promotes neither."""
    count, prob = args["count"], args["prob"]
    for position, (name, value) in enumerate((("count", count), ("prob", prob))):
        if not hasattr(value, "dtype"):
            raise TypeError(f"binomial(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")
    if count.dtype is not prob.dtype:
        raise DtypeError(f"binomial: count and prob must have one dtype, got count {describe(count)} and prob "
                         f"{describe(prob)}")
    return rt, rt


def _check(op, args) -> None:
    count, prob = args["count"], args["prob"]
    bad_count, bad_prob = _flags(F.logical_not(F.logical_and(F.logical_and(F.isfinite(count), F.ge(count, 0)),
                                                                 F.eq(count, F.floor(count)))),
                                 F.logical_not(F.logical_and(F.ge(prob, 0), F.le(prob, 1))))
    if bad_count:
        raise ArgumentError(f"binomial: count must hold finite non-negative whole numbers, got {describe(count)}")
    if bad_prob:
        raise ArgumentError(f"binomial: expects all probabilities in [0, 1], got some outside in {describe(prob)}")


def _binomial(count, prob, generator=None):
    size = broadcast_shapes("binomial", shape(count), shape(prob))
    work = precise_float(count.device)
    n = F.to_dtype(F.expand(count, size), work)
    p = F.to_dtype(F.expand(prob, size), work)
    flipped = F.gt(p, 0.5)
    p = F.where(flipped, F.sub(1.0, p), p)
    small = F.lt(F.mul(n, p), _SMALL_MEAN)
    draws = F.where(small, _waiting_times(n, p, small, generator),
                    _transformed_rejection(n, p, F.logical_not(small), generator))
    return F.to_dtype(F.where(flipped, F.sub(n, draws), draws), count.dtype)


def _waiting_times(n, p, active, generator, steps_per_check: int = 4):
    """Successes among n trials: geometric gaps between them, counted while the trials used stay within n."""
    active = F.logical_and(active, F.gt(p, 0.0))
    log_miss = F.log1p(F.neg(F.where(active, p, 0.5)))  # p == 0 elements are inactive; keep them finite
    used, count = F.zeros_like(n), F.zeros_like(n)
    while F.any(active).item():
        for _ in range(steps_per_check):
            gap = F.ceil(F.div(F.log(uniform_open_below(tuple(n.shape), n.dtype, n.device, generator)), log_miss))
            used = F.add(used, F.maximum(gap, 1.0))
            active = F.logical_and(active, F.le(used, n))
            count = F.add(count, F.to_dtype(active, n.dtype))
    return count


def _transformed_rejection(n, p, pending, generator):
    """BTRS for p <= 1/2 and n p >= _SMALL_MEAN: a transformed uniform proposes k, a squeeze accepts most
    proposals, the log pmf ratio to the mode decides the rest; rejected elements draw again."""
    p = F.where(pending, p, 0.5)  # elements not pending keep their arithmetic finite
    n = F.where(pending, n, 4.0 * _SMALL_MEAN)
    q = F.sub(1.0, p)
    spq = F.sqrt(F.mul(F.mul(n, p), q))
    b = F.add(F.mul(spq, 2.53), 1.15)
    a = F.add(F.add(F.mul(b, 0.0248), F.mul(p, 0.01)), -0.0873)
    c = F.add(F.mul(n, p), 0.5)
    v_r = F.sub(0.92, F.div(4.2, b))
    alpha = F.mul(F.add(F.div(5.1, b), 2.83), spq)
    log_odds = F.log(F.div(p, q))
    mode = F.floor(F.mul(F.add(n, 1.0), p))
    log_mode_pmf = F.add(F.lgamma(F.add(mode, 1.0)), F.lgamma(F.add(F.sub(n, mode), 1.0)))

    def accept(k, us, v):
        in_range = F.logical_and(F.ge(k, 0.0), F.le(k, n))
        quick = F.logical_and(F.ge(us, 0.07), F.le(v, v_r))
        log_v = F.log(F.div(F.mul(v, alpha), F.add(F.div(a, F.mul(us, us)), b)))
        safe_k = F.minimum(F.maximum(k, 0.0), n)
        log_ratio = F.add(F.sub(F.sub(log_mode_pmf, F.lgamma(F.add(safe_k, 1.0))),
                                F.lgamma(F.add(F.sub(n, safe_k), 1.0))), F.mul(F.sub(safe_k, mode), log_odds))
        return F.logical_and(in_range, F.logical_or(quick, F.le(log_v, log_ratio)))

    return transformed_rejection(a, b, c, pending, accept, generator)


def _samples(make, dtype):
    yield Sample((make((4000,), low=6.0, high=6.0), make((4000,), low=0.3, high=0.3)), note="many draws, small mean")
    yield Sample((make((4000,), low=200.0, high=200.0), make((4000,), low=0.6, high=0.6)),
                 note="many draws, large mean, p above 1/2")
    yield Sample((make((3, 1), low=7.0, high=7.0), make((4,), low=0.0, high=1.0)), note="broadcast")
    yield Sample((make((0, 2), low=1.0, high=1.0), make((0, 2), low=0.5, high=0.5)), note="empty")


defop("binomial(Tensor count, Tensor prob, Generator? generator=None)", "random", kind="composite",
      promotion=refusing_complex(_one_dtype, "binomial only supports floating-point dtypes for count"),
      dtypes="float", normalize=_check, composite=_binomial, samples=_samples, method=False, differentiable=False,
      meta=lambda count, prob, *rest: broadcast_shapes("binomial", shape(count), shape(prob)),
      doc="one Binomial(count, prob) sample per (broadcast) element: successes in count trials of probability prob")
