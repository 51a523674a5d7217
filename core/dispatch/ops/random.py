"""Random ops. Backends implement three samplers; everything else is composed from them.

Every sampler takes a ``generator`` (None: the device's default one, seeded by
``ember.manual_seed``), so results are reproducible per backend.
"""
from __future__ import annotations

from .. import rules
from ..dtypes import int64
from ..errors import DtypeError, ShapeError
from ..schema import Sample, defop
from . import F

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


def _bernoulli_samples(make, dtype):
    yield Sample((make((3, 4), low=0, high=1),), note="probabilities from the input")
    yield Sample((make((4000,)), 0.3), note="many draws with p=0.3")
    yield Sample((make(()), 1.0), note="0-d, p=1")


def _fill_samples(a, b):
    def samples(make, dtype):
        yield Sample((make((3, 4)), a, b))
        yield Sample((make((4000,)), a, b), note="many draws")
        yield Sample((make((4, 3), noncontiguous=True),), note="non-contiguous, default parameters")
    return samples


def _float_only(rt, op, values):
    dt, _ = rules.creation(rt, op, values)
    if not dt.is_floating_point:
        raise DtypeError(f"{op.name}: expected a floating dtype, got {dt.name}")
    return dt, dt


def _check_range(op, values):
    low, high = values[1], values[2]
    if op.name == "rand_int" and low >= high:
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    if op.name == "rand_normal" and high < 0:
        raise ValueError(f"normal: std must be non-negative, got {high}")


defop(f"rand_uniform(int[] size, float low=0.0, float high=1.0, {_TAIL})", "random", promotion=_float_only,
      meta=_size_meta, method=False, differentiable=False, doc="uniform samples in [low, high)",
      samples=_float_samples(-2.0, 3.0))
defop(f"rand_normal(int[] size, float mean=0.0, float std=1.0, {_TAIL})", "random", promotion=_float_only,
      samples=_float_samples(2.0, 0.5),
      meta=_size_meta, normalize=_check_range, method=False, differentiable=False,
      doc="normal samples with the given mean and standard deviation")
defop(f"rand_int(int[] size, int low, int high, {_TAIL})", "random", promotion=rules.integer_creation,
      samples=_rand_int_samples,
      meta=_size_meta, normalize=_check_range, method=False, differentiable=False,
      doc="integers drawn uniformly from [low, high)")

defop(f"rand(int[] size, {_TAIL})", "random", kind="composite", promotion=_float_only, meta=_size_meta,
      samples=_float_samples(),
      method=False, differentiable=False,
      composite=lambda size, generator=None, dtype=None, device=None:
      F.rand_uniform(size, 0.0, 1.0, generator=generator, dtype=dtype, device=device))
defop(f"randn(int[] size, {_TAIL})", "random", kind="composite", promotion=_float_only, meta=_size_meta,
      samples=_float_samples(),
      method=False, differentiable=False,
      composite=lambda size, generator=None, dtype=None, device=None:
      F.rand_normal(size, 0.0, 1.0, generator=generator, dtype=dtype, device=device))
defop(f"randint(int low, int high, int[] size, {_TAIL})", "random", kind="composite", samples=_randint_samples,
      promotion=rules.integer_creation, meta=lambda low, high, size, *rest: _size_meta(size), method=False,
      differentiable=False,
      composite=lambda low, high, size, generator=None, dtype=None, device=None:
      F.rand_int(size, low, high, generator=generator, dtype=dtype, device=device))


def _randperm_promotion(rt, op, values):
    dt = rules.requested_dtype(op, values) or int64
    return dt, dt


def _randperm(n, generator=None, dtype=None, device=None):
    keys = F.rand_uniform((n,), generator=generator, device=device, dtype="float64"
                          if _has_float64(device) else None)
    return F.to_dtype(F.argsort(keys), dtype or int64)


def _has_float64(device):
    from ..dtypes import float64
    from .. import registry
    dev = registry.resolve_device(device if device is not None else "cpu")
    return float64 in registry.get_backend(dev.type).supported_dtypes(dev.index)


defop(f"randperm(int n, {_TAIL})", "random", kind="composite", promotion=_randperm_promotion,
      samples=_randperm_samples, dtypes="numeric",  # bools cannot hold a permutation, as in PyTorch
      meta=lambda n, *rest: _size_meta((n,)), composite=_randperm, method=False, differentiable=False,
      doc="a random permutation of 0..n-1")


def _bernoulli(x, p=None, generator=None):
    probability = x if p is None else F.full_like(x, p)
    draws = F.rand_uniform(tuple(x.shape), generator=generator, dtype=x.dtype, device=x.device)
    return F.to_dtype(F.lt(draws, probability), x.dtype)


defop("bernoulli(Tensor input, float? p=None, *, Generator? generator=None)", "random", kind="composite",
      samples=_bernoulli_samples,
      promotion=rules.same, dtypes="float", meta=lambda x, *rest: tuple(x.shape), composite=_bernoulli,
      differentiable=False, doc="1 with probability input (or p), else 0")


def _check_std(op, values):
    if values[2] < 0:
        raise ValueError(f"normal_: std must be non-negative, got {values[2]}")


def _fill_random(sampler):
    def composite(x, a, b, generator=None):
        return F.copy_(x, sampler(tuple(x.shape), a, b, generator=generator, dtype=x.dtype, device=x.device))
    return composite


defop("normal_(Tensor self, float mean=0.0, float std=1.0, *, Generator? generator=None)", "random",
      samples=_fill_samples(2.0, 0.5),
      kind="composite", promotion=rules.same, dtypes="float", meta=lambda x, *rest: tuple(x.shape),
      normalize=_check_std, composite=_fill_random(lambda *a, **k: F.rand_normal(*a, **k)),
      differentiable=False, doc="fills self with normal samples, in place")
defop("uniform_(Tensor self, float low=0.0, float high=1.0, *, Generator? generator=None)", "random",
      samples=_fill_samples(-1.0, 1.0),
      kind="composite", promotion=rules.same, dtypes="float", meta=lambda x, *rest: tuple(x.shape),
      composite=_fill_random(lambda *a, **k: F.rand_uniform(*a, **k)), differentiable=False,
      doc="fills self with uniform samples in [low, high), in place")
