"""Sampling from distributions given by tensors: multinomial, bernoulli, normal, poisson.

All of them are composites over the three samplers of ``random.py``, so they draw on the
tensor's own device. Checks that read values (negative weights, rows summing to zero) reduce
on the device and bring back one small tensor of flags.
"""
from __future__ import annotations

import math

from ...schema import rules
from ...schema.binding import float_argument
from ...schema.dtypes import float32
from ...schema.errors import ArgumentError, DeviceError, DtypeError, ShapeError, UnsupportedDtypeError, describe
from ...schema.meta import broadcast_shapes, shape
from ...schema.promotion import result_type_of
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from .random import precise_float, uniform_open_below
from .rejection_sampling import transformed_rejection
from ._shared import _flags, _numbers


# -- multinomial -------------------------------------------------------------------------------

def _check_multinomial(op, args):
    weights, num_samples, replacement = args["input"], args["num_samples"], args["replacement"]

    def refuse(error: type, problem: str):  # the description only when raising: this runs on every call
        return error(f"multinomial: input {describe(weights)}: {problem}")
    if weights.ndim not in (1, 2):
        raise refuse(ShapeError, "prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise refuse(ArgumentError, f"cannot sample n_sample <= 0 samples (num_samples={num_samples})")
    categories = weights.shape[-1]
    if not replacement and num_samples > categories:
        raise refuse(ArgumentError, f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                                    f"(num_samples={num_samples}, {categories} categories)")
    zero_sum = "invalid multinomial distribution (sum of probabilities <= 0)"
    if weights.numel() == 0:  # no rows, or rows of no categories (whose sums are 0)
        if categories == 0:
            raise refuse(ArgumentError, zero_sum)
        return
    # A sampling loop checks every step: three reductions, read back together. The weights are finite and >= 0
    # when their smallest is >= 0 and their largest < inf (NaN fails both); then a row has a non-zero weight
    # exactly when its sum is > 0, and counting non-zero weights matters only for several draws without replacement.
    sums = F.sum(weights, -1)
    low, high, least_sum = _numbers(F.amin(weights), F.amax(weights), F.amin(sums) if sums.ndim else sums)
    if not (low >= 0 and high < math.inf):
        raise refuse(ArgumentError, "probability tensor contains either `inf`, `nan` or element < 0")
    if least_sum == 0:
        raise refuse(ArgumentError, zero_sum)
    if not replacement and num_samples > 1 and F.amin(F.sum(F.ne(weights, 0), -1)).item() < num_samples:
        raise refuse(ArgumentError, f"invalid multinomial distribution (with replacement=False, not enough "
                                    f"non-zero categories to sample {num_samples})")


def _multinomial(weights, num_samples, replacement=False, generator=None):
    weights = F.to_dtype(weights, precise_float(weights.device))
    if not replacement or num_samples == 1:
        return _exponential_race(weights, num_samples, generator)
    rows = weights if weights.ndim == 2 else F.unsqueeze(weights, 0)
    picks = _inverse_cdf(rows, num_samples, generator)
    return picks if weights.ndim == 2 else F.squeeze(picks, 0)


def _exponential_race(weights, num_samples, generator):
    """Without replacement: category i finishes at time Exp(1) / w_i; the first num_samples to finish,
    in order, are distributed as drawing one by one without putting back (the Gumbel-top-k trick)."""
    times = F.neg(F.log(uniform_open_below(tuple(weights.shape), weights.dtype, weights.device, generator)))
    speed = F.where(F.gt(weights, 0), F.div(weights, times), -1.0)  # weightless categories never win
    if num_samples == 1:
        return F.argmax(speed, -1, keepdim=True)
    return F.topk(speed, num_samples, -1).indices


def _inverse_cdf(rows, num_samples, generator):
    """With replacement: draw u in [0, total) and pick the category whose cumulative weight first
    exceeds u. One sort of the cumulative weights merged with the draws counts, for each draw, the
    cumulative weights at or below it; memory grows with categories + samples, not their product."""
    count, categories = rows.shape
    cumulative = F.cumsum(rows, -1)
    total = F.slice(cumulative, -1, categories - 1, categories)
    draws = F.mul(F.rand_uniform((count, num_samples), generator=generator, dtype=rows.dtype,
                                 device=rows.device), total)
    order = F.argsort(F.cat([cumulative, draws], -1), -1, stable=True)  # a tie puts the weight first
    below = F.cumsum(F.lt(order, categories), -1)
    counted = F.slice(F.scatter(F.zeros_like(below), -1, order, below), -1, categories, None)
    # a draw rounded up to the total itself picks the last category with weight
    last = F.sum(F.lt(cumulative, total), -1, keepdim=True)
    return F.minimum(counted, last)


def _multinomial_samples(make, dtype):
    yield Sample((make((5,), low=0.5, high=1.0), 4000, True), note="many draws with replacement")
    yield Sample((make((3, 6), low=0.0, high=1.0), 4, False), note="rows without replacement")
    yield Sample((make((2, 3), low=0.0, high=1.0), 1), note="one sample per row")
    yield Sample((make((2, 4), low=0.0, high=1.0), 50, True), note="rows with replacement")
    yield Sample((make((0, 3), low=0.0, high=1.0), 2), note="no rows")


defop("multinomial(Tensor input, int num_samples, bool replacement=False, *, Generator? generator=None)", "random",
      kind="composite",
      promotion=refusing_complex(rules.to_int64, "multinomial only supports floating-point dtypes for input"),
      dtypes="float", normalize=_check_multinomial,
      meta=lambda w, n, *rest: (*shape(w)[:-1], n), composite=_multinomial, samples=_multinomial_samples,
      differentiable=False, doc="indices drawn from the categorical distribution each row of weights gives")


# -- bernoulli ------------------------------------------------------------------------------------

def _check_probability(name, p):
    if p is not None and not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{name}: expects p to be in [0, 1], but got p={p}")


def _check_probabilities(name, p) -> None:
    """Probabilities given as a tensor: every one in [0, 1] (NaN included in the refusal)."""
    outside, = _flags(F.logical_not(F.logical_and(F.ge(p, 0), F.le(p, 1))))
    if outside:
        raise ArgumentError(f"{name}: expects all probabilities in [0, 1], got some outside in {describe(p)}")


def _hits(probability, size, generator, device):
    """Booleans that are True with the given probability (a number or a tensor broadcast to size)."""
    dtype = probability.dtype if hasattr(probability, "dtype") else precise_float(device)
    return F.lt(F.rand_uniform(size, generator=generator, dtype=dtype, device=device), probability)


def _bernoulli(x, p=None, generator=None):
    if p is None:
        _check_probabilities("bernoulli", x)
    return F.to_dtype(_hits(x if p is None else p, tuple(x.shape), generator, x.device), x.dtype)


def _bernoulli_samples(make, dtype):
    if dtype.is_floating_point:
        yield Sample((make((3, 4), low=0, high=1),), note="probabilities from the input")
    yield Sample((make((4000,)), 0.3), note="many draws with p=0.3")
    yield Sample((make(()), 1.0), note="0-d, p=1")


def _bernoulli_normalize(op, args) -> None:
    """With p, any dtype holds the draws (PyTorch's too); without, input holds the probabilities: floats."""
    if args["p"] is None and not args["input"].dtype.is_floating_point:
        raise UnsupportedDtypeError(f"bernoulli: probabilities in input must be floating, got "
                                    f"{describe(args['input'])}; pass p= to draw into this dtype")
    _check_probability("bernoulli", args["p"])


defop("bernoulli(Tensor input, float? p=None, *, Generator? generator=None)", "random", kind="composite",
      samples=_bernoulli_samples, normalize=_bernoulli_normalize, promotion=rules.same, dtypes="all",
      meta=lambda x, *rest: tuple(x.shape), composite=_bernoulli,
      differentiable=False, doc="1 with probability input (or p), else 0")


def _check_bernoulli_fill(op, args):
    x, p = args["self"], args["p"]
    if not hasattr(p, "_data"):
        return _check_probability("bernoulli_", float_argument("bernoulli_", "p", p))
    if not p.dtype.is_floating_point:
        raise DtypeError(f"bernoulli_: p must be a floating tensor, got {describe(p)}")
    if p.device != x.device:
        raise DeviceError(f"bernoulli_: p is on {p.device} but self is on {x.device}")
    if broadcast_shapes("bernoulli_", tuple(x.shape), tuple(p.shape)) != tuple(x.shape):
        raise ShapeError(f"bernoulli_: p of shape {tuple(p.shape)} does not broadcast to self's {tuple(x.shape)}")
    _check_probabilities("bernoulli_", p)


def _bernoulli_fill(x, p=0.5, generator=None):
    return F.copy_(x, _hits(p, tuple(x.shape), generator, x.device))


def _bernoulli_fill_samples(make, dtype):
    yield Sample((make((3, 4)),), note="p=0.5")
    yield Sample((make((4000,)), 0.2), note="many draws with p=0.2")
    yield Sample((make((4000,)), make((4000,), dtype=float32, low=0.3, high=0.31)), note="p as a tensor")
    yield Sample((make((2, 3)), make((3,), dtype=float32, low=0, high=1)), note="p broadcast")


defop("bernoulli_(Index self, Any p=0.5, *, Generator? generator=None)", "random", kind="composite",
      torch_keywords={"input": "self"},
      promotion=lambda rt, op, args: (args["self"].dtype,) * 2, normalize=_check_bernoulli_fill,
      meta=lambda x, *rest: tuple(x.shape),
      composite=_bernoulli_fill, samples=_bernoulli_fill_samples, differentiable=False,
      doc="fills self with 1 with probability p (a number or a float tensor broadcast to self), else 0")


# -- normal with tensor parameters ---------------------------------------------------------------

def _check_std(op, args):
    mean, std = args["mean"], args["std"]
    if hasattr(std, "_data") and std.dtype.is_complex:
        raise UnsupportedDtypeError(f"normal expects standard deviation to be non-complex, got {describe(std)}")
    if not hasattr(mean, "_data") and not hasattr(std, "_data"):
        raise TypeError(f"normal: mean ({mean!r}) and std ({std!r}) are both numbers: give a size, as in "
                        f"normal(mean, std, size)")
    if hasattr(std, "_data"):
        negative, = _flags(F.lt(std, 0))
    else:
        negative = std < 0
    if negative:
        raise ArgumentError(f"normal: expects all elements of std >= 0.0, got std {describe(std)}")


def _float_parameters(rt, op, args):
    """Tensor mean and std must be floating, as in PyTorch: a float number does not make them so. A complex mean
    draws complex samples (std split over both parts); a complex std is refused by ``_check_std``."""
    for v in (args["mean"], args["std"]):
        dt = getattr(v, "dtype", None)
        if dt is not None and dt.kind not in ("float", "complex"):
            raise DtypeError(f"normal: expected floating mean and std, got {describe(v)}")
    return rt, rt


def _normal(mean, std=1.0, generator=None):
    operands = [v for v in (mean, std) if hasattr(v, "_data")]
    dtype = result_type_of([t.dtype for t in operands if t.ndim], [t.dtype for t in operands if not t.ndim],
                           [v for v in (mean, std) if not hasattr(v, "_data")])
    size = broadcast_shapes("normal", shape(mean), shape(std))
    noise = F.rand_normal(size, generator=generator, dtype=dtype, device=operands[0].device)
    return F.add(F.mul(noise, std), mean)


def _normal_samples(make, dtype):
    """std in the real component dtype: a complex mean takes a real std (PyTorch refuses a complex one)."""
    real = dtype.to_real()
    yield Sample((make((3, 4)), make((3, 4), low=0.5, high=1.0, dtype=real)), note="tensor mean and std")
    yield Sample((make((4000,), low=2.0, high=2.001), 0.5), note="many draws, float std")
    yield Sample((2.0, make((4000,), low=0.5, high=0.501, dtype=real)), note="many draws, float mean")
    yield Sample((make((3,)), make((2, 3), low=0.5, high=1.0, dtype=real)), note="broadcast")
    yield Sample((make((0, 2)), 1.0), note="empty")


defop("normal(Tensor mean, Tensor std=1.0, *, Generator? generator=None)", "random", kind="composite",
      promotion=_float_parameters, dtypes="float+complex", normalize=_check_std, composite=_normal,
      samples=_normal_samples,
      number_operands=("mean", "std"),
      meta=lambda mean, std, *rest: broadcast_shapes("normal", shape(mean), shape(std)), method=False,
      differentiable=False, doc="one normal sample per element, with elementwise (broadcast) mean and std")


# -- poisson --------------------------------------------------------------------------------------

#: Below this rate, count arrivals (about rate + 1 steps); from it on, transformed rejection (PTRS).
_SMALL_RATE = 10.0
_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def _check_rates(op, args):
    rates = args["input"]
    invalid, = _flags(F.logical_not(F.logical_and(F.ge(rates, 0), F.isfinite(rates))))
    if invalid:
        raise ArgumentError(f"poisson: invalid Poisson rate in {describe(rates)}: expected every rate to be "
                            f"finite and non-negative")


def _poisson(rates, generator=None):
    work = F.to_dtype(rates, precise_float(rates.device))
    small = F.lt(work, _SMALL_RATE)
    counted = _count_arrivals(work, small, generator)
    rejected = _transformed_rejection(work, F.logical_not(small), generator)
    return F.to_dtype(F.where(small, counted, rejected), rates.dtype)


def _count_arrivals(rates, active, generator, steps_per_check: int = 4):
    """A unit-rate Poisson process: the number of arrivals before time ``rate``, exactly Poisson(rate)."""
    clock, count = F.zeros_like(rates), F.zeros_like(rates)
    while F.any(active).item():
        for _ in range(steps_per_check):
            clock = F.add(clock, F.neg(F.log(uniform_open_below(tuple(rates.shape), rates.dtype, rates.device,
                                                                generator))))
            active = F.logical_and(active, F.lt(clock, rates))
            count = F.add(count, F.to_dtype(active, rates.dtype))
    return count


def _transformed_rejection(rates, pending, generator):
    """Hoermann's PTRS (1993): a transformed uniform proposes k, a squeeze accepts most proposals
    quickly, the exact pmf ratio decides the rest; rejected elements draw again."""
    lam = F.maximum(rates, _SMALL_RATE)  # other elements are not pending; keep their arithmetic finite
    log_lam = F.log(lam)
    b = F.add(F.mul(F.sqrt(lam), 2.53), 0.931)
    a = F.add(F.mul(b, 0.02483), -0.059)
    log_inv_alpha = F.log(F.add(F.div(1.1328, F.sub(b, 3.4)), 1.1239))
    v_r = F.sub(0.9277, F.div(3.6224, F.sub(b, 2.0)))

    def accept(k, us, v):
        quick = F.logical_and(F.ge(us, 0.07), F.le(v, v_r))
        hopeless = F.logical_or(F.lt(k, 0), F.logical_and(F.lt(us, 0.013), F.gt(v, us)))
        log_ratio = F.sub(F.add(F.log(v), log_inv_alpha), F.log(F.add(F.div(a, F.mul(us, us)), b)))
        exact = F.logical_and(F.logical_not(hopeless), F.le(log_ratio, _log_pmf(k, lam, log_lam)))
        return F.logical_or(quick, exact)

    return transformed_rejection(a, b, F.add(lam, 0.43), pending, accept, generator)


def _stirling_tail(x):
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2): below 2e-10 off for x >= 9."""
    inverse = F.reciprocal(x)
    square = F.mul(inverse, inverse)
    return F.mul(inverse, F.add(F.mul(square, F.sub(F.mul(square, 1 / 1260), 1 / 360)), 1 / 12))


def _log_pmf(k, lam, log_lam):
    """log(lam^k e^-lam / k!) for whole k >= 0, arranged so that float32 keeps its precision for rates
    in the millions: the large terms k log(lam / (k+1)) and (k+1) - lam nearly cancel, and are
    combined through log1p. Below k = 8, where Stirling's tail is not accurate, lgamma gives log k!."""
    x = F.add(k, 1.0)
    large = F.sub(F.add(F.mul(k, F.log1p(F.div(F.sub(lam, x), x))), F.sub(x, lam)),
                  F.add(F.add(F.mul(F.log(x), 0.5), _HALF_LOG_TWO_PI), _stirling_tail(x)))
    small = F.sub(F.sub(F.mul(k, log_lam), lam), F.lgamma(x))
    return F.where(F.ge(k, 8.0), large, small)


def _poisson_samples(make, dtype):
    yield Sample((make((4000,), low=2.0, high=3.0),), note="many draws, small rates")
    yield Sample((make((4000,), low=40.0, high=41.0),), note="many draws, large rates")
    yield Sample((make((3, 4), low=0.0, high=30.0),), note="small and large rates")
    yield Sample((make((0, 2), low=0.0, high=1.0),), note="empty")


defop("poisson(Tensor input, Generator? generator=None)", "random", kind="composite", promotion=rules.same,
      dtypes="float", normalize=_check_rates, meta=lambda x, *rest: tuple(x.shape), composite=_poisson,
      samples=_poisson_samples, method=False, differentiable=False,
      doc="one Poisson sample per element, with the element as the rate")
