"""Random ops. Backends implement three samplers; everything else is composed from them.

Every sampler takes a ``generator`` (None: the device's default one, seeded by
``ember.manual_seed``), so results are reproducible per backend.
"""
from __future__ import annotations

import math

from ...schema import rules
from ...schema.dtypes import float32, float64, int64
from ...schema.errors import ArgumentError, DtypeError, NumberOverflowError, ShapeError
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F

_TAIL = "*, Generator? generator=None, dtype? dtype=None, device? device=None"


def _size_meta(size, *rest):
    if any(s < 0 for s in size):
        raise ShapeError(f"negative size in {size}: sizes must be non-negative")
    return size


# -- conformance samples: a few thousand draws where the suite checks statistics ---------------

def _float_samples(a=None, b=None):
    def samples(make, dtype):
        params = () if a is None else (a, b)
        yield Sample(((3, 4), *params), {"dtype": dtype})
        yield Sample(((4000,), *params), {"dtype": dtype}, note="many draws")
        yield Sample(((),), {"dtype": dtype}, note="0-d")
        yield Sample(((0, 3),), {"dtype": dtype}, note="empty")
    return samples


def _int_range(dtype) -> tuple:
    """A range of integers that the dtype holds exactly."""
    if dtype.kind == "bool":
        return 0, 2
    if dtype.name in ("uint8", "int8", "bfloat16"):
        return (0, 200) if dtype.name == "uint8" else (-100, 100)
    return -1000, 1000


def _rand_int_samples(make, dtype):
    low, high = _int_range(dtype)
    yield Sample(((3, 4), low, high), {"dtype": dtype})
    yield Sample(((4000,), low, high), {"dtype": dtype}, note="many draws")
    yield Sample(((), low, low + 1), {"dtype": dtype}, note="0-d, one value possible")
    yield Sample(((0,), low, high), {"dtype": dtype}, note="empty")


def _randint_samples(make, dtype):
    low, high = _int_range(dtype)
    yield Sample((low, high, (3, 4)), {"dtype": dtype})
    yield Sample((low, high, (4000,)), {"dtype": dtype}, note="many draws")


def _randperm_samples(make, dtype):
    for n in (5, 50, 1, 0):
        yield Sample((n,), {"dtype": dtype}, note=f"n={n}")


def _float_only(rt, op, args):
    """Floating and complex dtypes (a complex draw is a pair of real ones, as in PyTorch)."""
    dt, _ = rules.creation(rt, op, args)
    if dt.kind not in ("float", "complex"):
        raise DtypeError(f"{op.name}: expected a floating or complex dtype, got {dt.name}")
    return dt, dt


def _as_pairs(sampler, scale: float = 1.0):
    """A real sampler's complex form: the real and imaginary parts drawn as a trailing pair of reals.

    Backends draw only reals; ``scale`` divides the spread between the parts (a standard complex normal has
    variance 1 in all, 1/2 in each part, as PyTorch draws it)."""
    def complex_draws(size, a, b, generator=None, dtype=None, device=None):
        parts = sampler(tuple(size) + (2,), a, b * scale, generator=generator, dtype=dtype.to_real(), device=device)
        return F.view_as_complex(parts)
    return complex_draws


def _check_range(op, args):
    if op.name == "rand_int" and args["low"] >= args["high"]:
        raise ArgumentError(f"randint: low ({args['low']}) must be less than high ({args['high']})")
    if op.name == "rand_int" and not (-2 ** 63 <= args["low"] and args["high"] - 1 < 2 ** 63):
        raise NumberOverflowError(f"randint: [low, high) = [{args['low']}, {args['high']}) goes beyond int64, "
                                  f"which holds every draw")
    if op.name == "rand_normal" and args["std"] < 0:
        raise ArgumentError(f"normal: std must be non-negative, got {args['std']}")


defop(f"rand_uniform(int[] size, float low=0.0, float high=1.0, {_TAIL})", "random", promotion=_float_only,
      dtypes="float+complex", complex_decomposition=_as_pairs(lambda *a, **k: F.rand_uniform(*a, **k)),
      meta=_size_meta, method=False, differentiable=False, doc="uniform samples in [low, high)",
      samples=_float_samples(-2.0, 3.0))
defop(f"rand_normal(int[] size, float mean=0.0, float std=1.0, {_TAIL})", "random", promotion=_float_only,
      dtypes="float+complex", complex_decomposition=_as_pairs(lambda *a, **k: F.rand_normal(*a, **k), math.sqrt(0.5)),
      samples=_float_samples(2.0, 0.5),
      meta=_size_meta, normalize=_check_range, method=False, differentiable=False,
      doc="normal samples with the given mean and standard deviation")
defop(f"rand_int(int[] size, int low, int high, {_TAIL})", "random", promotion=rules.integer_creation,
      samples=_rand_int_samples,
      meta=_size_meta, normalize=_check_range, method=False, differentiable=False,
      doc="integers drawn uniformly from [low, high)")

defop(f"rand(int[] size, {_TAIL})", "random", kind="composite", promotion=_float_only, meta=_size_meta,
      dtypes="float+complex",
      samples=_float_samples(),
      method=False, differentiable=False,
      composite=lambda size, generator=None, dtype=None, device=None:
      F.rand_uniform(size, 0.0, 1.0, generator=generator, dtype=dtype, device=device))
defop(f"randn(int[] size, {_TAIL})", "random", kind="composite", promotion=_float_only, meta=_size_meta,
      dtypes="float+complex",
      samples=_float_samples(),
      method=False, differentiable=False,
      composite=lambda size, generator=None, dtype=None, device=None:
      F.rand_normal(size, 0.0, 1.0, generator=generator, dtype=dtype, device=device))
defop(f"randint(int low, int high, int[] size, {_TAIL})", "random", kind="composite", samples=_randint_samples,
      promotion=rules.integer_creation, meta=lambda low, high, size, *rest: _size_meta(size), method=False,
      differentiable=False,
      composite=lambda low, high, size, generator=None, dtype=None, device=None:
      F.rand_int(size, low, high, generator=generator, dtype=dtype, device=device))


def _randperm_promotion(rt, op, args):
    dt = rules.requested_dtype(args) or int64
    return dt, dt


def _randperm(n, generator=None, dtype=None, device=None):
    keys = F.rand_uniform((n,), generator=generator, device=device, dtype=precise_float(device))
    return F.to_dtype(F.argsort(keys), dtype or int64)


def precise_float(device):
    """float64 where the device has it, else float32: for sums of probabilities, counts and sort keys."""
    from ...contract import registry
    dev = registry.resolve_device(device if device is not None else "cpu")
    return float64 if float64 in registry.get_backend(dev.type).supported_dtypes(dev.index) else float32


def uniform_open_below(size, dtype, device, generator):
    """Uniform draws in (0, 1], whose logarithm is finite."""
    return F.sub(1.0, F.rand_uniform(size, generator=generator, dtype=dtype, device=device))


def uniform_integers(size, low: int, high: int, generator, device):
    """int64 draws uniform on [low, high), for every range an int64 holds (spans up to 2**64)."""
    span = high - low
    if span <= 2 ** 63:
        draws = _below(size, span, generator, device)
        return draws if low == 0 else F.add(draws, low)
    # int64's range reaching below zero: [low, low + 2**63) or, with the remaining weight, the rest
    lower = F.add(_below(size, 2 ** 63, generator, device), low)
    upper = F.add(_below(size, span - 2 ** 63, generator, device), low + 2 ** 63)
    choice = F.rand_uniform(size, generator=generator, dtype=precise_float(device), device=device)
    return F.where(F.lt(choice, 2 ** 63 / span), lower, upper)


def _below(size, bound: int, generator, device):
    """int64 draws uniform on [0, bound) for bound <= 2**63 (beyond rand_int's int64 ``high``: two halves)."""
    if bound < 2 ** 63:
        return F.rand_int(size, 0, bound, generator=generator, dtype=int64, device=device)
    high, low = (F.rand_int(size, 0, 2 ** bits, generator=generator, dtype=int64, device=device) for bits in (31, 32))
    return F.add(F.mul(high, 2 ** 32), low)


def integer_bounds(dtype) -> tuple[int, int]:
    """The smallest and largest integers that every value of ``dtype`` in between holds exactly."""
    if dtype.kind == "bool":
        return 0, 1
    if dtype.is_floating_point:
        digits = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name]
        return -2 ** digits, 2 ** digits
    bits = 8 * dtype.itemsize
    return (-2 ** (bits - 1), 2 ** (bits - 1) - 1) if dtype.is_signed else (0, 2 ** bits - 1)


def check_integer_range(name: str, dtype, low: int, high: int) -> None:
    """[low, high) must be non-empty and inside what ``dtype`` holds, as PyTorch checks it."""
    if low >= high:
        raise ArgumentError(f"{name}: expects 'from' to be less than 'to', but got from={low} >= to={high}")
    lowest, highest = integer_bounds(dtype)
    if not lowest <= low <= highest:
        raise ArgumentError(f"{name}: from={low} is out of bounds for {dtype.name} (which holds {lowest}..{highest})")
    if not lowest <= high - 1 <= highest:
        raise ArgumentError(f"{name}: to - 1 = {high - 1} is out of bounds for {dtype.name} "
                            f"(which holds {lowest}..{highest})")


defop(f"randperm(int n, {_TAIL})", "random", kind="composite", promotion=_randperm_promotion,
      samples=_randperm_samples, dtypes="numeric",  # bools cannot hold a permutation, as in PyTorch
      meta=lambda n, *rest: _size_meta((n,)), composite=_randperm, method=False, differentiable=False,
      doc="a random permutation of 0..n-1")


# -- the *_like forms: input's shape, and by default its dtype and device -----------------------

_LIKE_TAIL = "*, Generator? generator=None, dtype? dtype=None, device? device=None"


def _like_promotion(floating: bool):
    def promotion(rt, op, args):
        dt = rules.requested_dtype(args) or args["input"].dtype
        if floating and dt.kind not in ("float", "complex"):
            raise DtypeError(f"{op.name}: expected a floating or complex dtype, got {dt.name}")
        return dt, dt
    return promotion


def _like_samples(*params):
    def samples(make, dtype):
        yield Sample((make((3, 4)), *params), {"dtype": dtype}, note="dtype given")
        yield Sample((make((4000,), dtype=dtype), *params), note="many draws, input's dtype")
        yield Sample((make((0, 2)), *params), {"dtype": dtype}, note="empty")
    return samples


def _check_randint_like(op, args):
    x, low, high = args["input"], args["low"], args["high"]
    check_integer_range("randint_like", rules.requested_dtype(args) or x.dtype, low, high)


defop(f"rand_like(Tensor input, {_LIKE_TAIL})", "random", kind="composite", promotion=_like_promotion(True),
      dtypes="all+complex",
      meta=lambda x, *rest: tuple(x.shape), samples=_like_samples(), method=False, differentiable=False,
      composite=lambda x, generator=None, dtype=None, device=None: F.rand_uniform(
          tuple(x.shape), generator=generator, dtype=dtype or x.dtype, device=device or x.device),
      doc="uniform samples in [0, 1) with input's shape")
defop(f"randn_like(Tensor input, {_LIKE_TAIL})", "random", kind="composite", promotion=_like_promotion(True),
      dtypes="all+complex",
      meta=lambda x, *rest: tuple(x.shape), samples=_like_samples(), method=False, differentiable=False,
      composite=lambda x, generator=None, dtype=None, device=None: F.rand_normal(
          tuple(x.shape), generator=generator, dtype=dtype or x.dtype, device=device or x.device),
      doc="standard normal samples with input's shape")


def _randint_like(x, low, high, generator=None, dtype=None, device=None):
    device = device or x.device
    return F.to_dtype(uniform_integers(tuple(x.shape), low, high, generator, device), dtype or x.dtype)


def _randint_like_samples(make, dtype):
    low, high = _int_range(dtype)
    yield Sample((make((3, 4)), low, high), {"dtype": dtype})
    yield Sample((make((4000,), dtype=dtype), low, high), note="many draws, input's dtype")


defop(f"randint_like(Tensor input, int low, int high, {_LIKE_TAIL})", "random", kind="composite",
      promotion=refusing_complex(_like_promotion(False),
                                 "check_random_bounds handles only integral, floating-point and boolean types"),
      normalize=_check_randint_like, meta=lambda x, *rest: tuple(x.shape),
      composite=_randint_like, samples=_randint_like_samples, method=False, differentiable=False,
      doc="integers uniform on [low, high) with input's shape")


# -- in-place fills ----------------------------------------------------------------------------

def _wider(dtype, device):
    """The float to draw in for a fill of ``dtype``: half precision and integers draw wider, then round."""
    if dtype.is_floating_point:
        return dtype if dtype.itemsize > 2 else float32
    return precise_float(device)


def _positive(name: str, param: str, what: str):
    """A check that the attribute ``param`` (PyTorch's messages call it ``what``) is positive."""
    def normalize(op, args):
        if not args[param] > 0:
            raise ArgumentError(f"{name}: expects {what} > 0.0, but found {what}={args[param]}")
    return normalize


def _check_std(op, args):
    if args["std"] < 0:
        raise ArgumentError(f"normal_: expects std >= 0.0, but found std={args['std']}")


def _check_uniform(op, args):
    if args["from"] > args["to"]:
        raise ArgumentError(f"uniform_: expects a [from, to) range, but found from={args['from']} > to={args['to']}")


def _check_geometric(op, args):
    if not 0 < args["p"] < 1:
        raise ArgumentError(f"geometric_: expects p to be in (0, 1), but got p={args['p']}")


def _continuous(distribution: str):
    """PyTorch's refusal of complex self for the fills of a real-valued distribution."""
    return refusing_complex(rules.same, f"{distribution} distribution is a continuous probability distribution. "
                                        f"dtype must be a floating point")


def _fill(draw):
    """An in-place op writing ``draw(size, *params, generator=, dtype=, device=)`` into self."""
    def composite(x, *args):
        *params, generator = args
        return F.copy_(x, draw(tuple(x.shape), *params, generator=generator, dtype=x.dtype, device=x.device))
    return composite


def _transformed(sampler, transform):
    """A draw that transforms the sampler's draws, made in a wide enough float and rounded afterwards
    (the bounded draws of uniform_ and normal_ come straight from their samplers instead)."""
    def draw(size, *params, generator, dtype, device):
        return transform(sampler(size, generator, _wider(dtype, device), device), *params)
    return draw


def _unit_uniform(size, generator, dtype, device):
    return uniform_open_below(size, dtype, device, generator)


def _unit_normal(size, generator, dtype, device):
    return F.rand_normal(size, generator=generator, dtype=dtype, device=device)


def _fill_samples(*params, required: int = 0):
    """Samples for an in-place fill; ``required`` of the params have no default."""
    def samples(make, dtype):
        yield Sample((make((3, 4)), *params))
        yield Sample((make((4000,)), *params), note="many draws")
        yield Sample((make((4, 3), noncontiguous=True), *params[:required]), note="non-contiguous, defaults")
    return samples


def _defill(signature: str, draw, doc: str, dtypes: str = "float", normalize=None, samples=None,
            promotion=rules.same) -> None:
    defop(f"{signature}, *, Generator? generator=None)", "random", kind="composite", dtypes=dtypes,
          promotion=promotion, meta=lambda x, *rest: tuple(x.shape),
          normalize=normalize, composite=_fill(draw), samples=samples, differentiable=False, doc=doc,
          torch_keywords={"input": "self"})


_defill("normal_(Tensor self, float mean=0.0, float std=1.0", lambda *a, **k: F.rand_normal(*a, **k),
        "fills self with normal samples, in place (complex: std split over both parts)", dtypes="float+complex",
        normalize=_check_std, samples=_fill_samples(2.0, 0.5))
_defill("uniform_(Tensor self, float from=0.0, float to=1.0", lambda *a, **k: F.rand_uniform(*a, **k),
        "fills self with uniform samples in [from, to), in place (complex: each part)", dtypes="float+complex",
        normalize=_check_uniform, samples=_fill_samples(-1.0, 1.0))
_defill("log_normal_(Tensor self, float mean=1.0, float std=2.0",
        _transformed(_unit_normal, lambda z, mean, std: F.exp(F.add(F.mul(z, std), mean))),
        "fills self with exp of normal samples (mean and std of the logarithm), in place",
        normalize=_positive("log_normal_", "std", "std"), samples=_fill_samples(0.5, 0.25))
_defill("exponential_(Tensor self, float lambd=1.0",
        _transformed(_unit_uniform, lambda u, lambd: F.div(F.neg(F.log(u)), lambd)),
        "fills self with exponential samples of rate lambd, in place", promotion=_continuous("Exponential"),
        normalize=_positive("exponential_", "lambd", "lambda"), samples=_fill_samples(2.0))
_defill("cauchy_(Tensor self, float median=0.0, float sigma=1.0",
        _transformed(_unit_uniform,
                     lambda u, median, sigma: F.add(F.mul(F.tan(F.mul(F.sub(u, 0.5), math.pi)), sigma), median)),
        "fills self with Cauchy samples, in place", normalize=_positive("cauchy_", "sigma", "sigma"),
        promotion=_continuous("Cauchy"),
        samples=_fill_samples(1.0, 0.5))
_defill("geometric_(Tensor self, float p",
        _transformed(_unit_uniform, lambda u, p: F.add(F.floor(F.div(F.log(u), math.log1p(-p))), 1.0)),
        "fills self with the number of Bernoulli(p) trials up to the first success, in place",
        dtypes="numeric", normalize=_check_geometric, samples=_fill_samples(0.3, required=1))


def _random_bounds(op, args):
    """random_(from, to=None): an unset ``to`` is one past the largest integer self's dtype holds."""
    x = args["self"]
    if args["to"] is None:
        args["to"] = integer_bounds(x.dtype)[1] + 1
    check_integer_range("random_", x.dtype, args["from"], args["to"])


def _random_fill(x, low, high, generator=None):
    return F.copy_(x, uniform_integers(tuple(x.shape), low, high, generator, x.device))


def _random_samples(make, dtype):
    low, high = _int_range(dtype)
    yield Sample((make((3, 4)),), note="the dtype's whole range")
    yield Sample((make((4000,)), max(low, 0), high), note="many draws")
    yield Sample((make((4000,)), low), note="from only")


defop("random_(Tensor self, int from=0, int? to=None, *, Generator? generator=None)", "random", kind="composite",
      torch_keywords={"input": "self"},
      promotion=rules.same, normalize=_random_bounds, meta=lambda x, *rest: tuple(x.shape),
      composite=_random_fill, samples=_random_samples, method=False, differentiable=False,
      doc="fills self with integers uniform on [from, to); to defaults to one past the dtype's largest")
