"""Creation ops: new tensors from sizes and values, on the ``device=`` given or the default device."""
from __future__ import annotations

import math

import numpy as np

from ...execution.memory import ADDRESSABLE
from ...schema import rules
from ...schema.dtypes import float64, get_default_complex_dtype, get_default_dtype, int64
from ...schema.errors import ArgumentError, NumberOverflowError, OutOfMemoryError, ShapeError
from ...schema.overflow import INTEGER_RANGES, check_fits
from ...schema import Sample, defop
from ..namespace import F

_TAIL = "*, dtype? dtype=None, device? device=None"


def _fill_value(dtype):
    """A fill value that means the same in every dtype's category."""
    return True if dtype.kind == "bool" else (7 if dtype.kind == "int" else 2.5)


def _sized_samples(make, dtype):
    for size in ((2, 3), (), (0, 4)):
        yield Sample((size,), {"dtype": dtype}, note=f"size {size}")


def _arange_samples(make, dtype):
    yield Sample((5,), {"dtype": dtype}, note="end only")
    yield Sample((1, 7, 2), {"dtype": dtype})
    yield Sample((6, 0, -2), {"dtype": dtype}, note="descending")
    yield Sample((0.5, 3.0, 0.25), {"dtype": dtype}, note="float steps")
    yield Sample((3, 3), {"dtype": dtype}, note="empty")


def _full_samples(make, dtype):
    for size in ((2, 3), (), (0,)):
        yield Sample((size, _fill_value(dtype)), {"dtype": dtype}, note=f"size {size}")


def _eye_samples(make, dtype):
    yield Sample((3,), {"dtype": dtype})
    yield Sample((2, 4), {"dtype": dtype}, note="rectangular")
    yield Sample((0,), {"dtype": dtype}, note="empty")


def _linspace_samples(make, dtype):
    yield Sample((0, 10, 11), {"dtype": dtype})
    yield Sample((1.0, 2.0, 5), {"dtype": dtype}, note="fractions")
    yield Sample((3, 3, 1), {"dtype": dtype}, note="one step")
    yield Sample((0, 1, 0), {"dtype": dtype}, note="no steps")


def _like_samples(*fill):
    def samples(make, dtype):
        yield Sample((make((2, 3)), *fill))
        yield Sample((make(()), *fill), note="0-d")
        yield Sample((make((3, 4), noncontiguous=True), *fill), note="non-contiguous")
        yield Sample((make((2, 0)), *fill), {"dtype": "int32"}, note="empty, dtype=int32")
    return samples


def _size_meta(size, *rest):
    if any(s < 0 for s in size):
        raise ShapeError(f"negative size in {size}: sizes must be non-negative")
    return size


# -- ONNX lowerings: sizes and bounds through g.ints / g.scalar, so that a mask built from a sequence
# length follows that length in the exported model -----------------------------------------------------

def _arange_onnx(g, start, end, step, dtype=None, device=None):
    """ONNX Range in int64 when every bound is an integer (exact count, any length), else in float64 (the
    count Python's arithmetic gives), cast to the result dtype."""
    integral = all(not isinstance(v, float) for v in (start, end, step))
    compute = int64 if integral else float64
    values = g.op("Range", g.scalar(start, compute), g.scalar(end, compute), g.scalar(step, compute))
    return values if g.out_dtypes[0] is compute else g.cast(values, g.out_dtypes[0])


def _full_onnx(g, size, fill_value, dtype=None, device=None):
    return g.op("Expand", g.scalar(fill_value, g.out_dtypes[0]), g.ints(size))


def _empty_onnx(g, size, dtype=None, device=None):
    """Uninitialised memory has no ONNX form; zeros are one of its valid contents."""
    return _full_onnx(g, size, 0)


def _arange_normalize(op, args):
    start, end, step = args["start"], args["end"], args["step"]
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ArgumentError("arange: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ArgumentError(f"arange: unsupported range: {start} -> {end} (step {step}): bounds must be finite")
    if (end - start) * step < 0:
        raise ArgumentError(f"arange: upper bound and lower bound inconsistent with step sign "
                            f"(start={start}, end={end}, step={step})")
    args["start"], args["end"] = start, end


#: The bytes of each value arange computes: backends make its values at 64 bits (int64, or float64 for a float
#: result, as PyTorch accumulates them on the CPU) before the cast to the result dtype.
_ARANGE_VALUE_BYTES = 8


def _arange_meta(start, end, step, *rest) -> tuple[int]:
    """ceil((end - start) / step) values, refused before any backend computes them when an int64 cannot count
    them (PyTorch's "invalid size" check) or when their 64-bit values span more than a device can address."""
    count = (end - start) / step  # a float, as the backends count: infinite for 0 -> 1e300 (step 1e-300)
    if not count <= INTEGER_RANGES[int64][1]:
        raise ArgumentError(f"arange: invalid size, possible overflow? {start} -> {end} (step {step}) makes {count:g} "
                            f"values, more than an int64 can count")
    size = max(0, math.ceil(count))
    if size * _ARANGE_VALUE_BYTES > ADDRESSABLE:
        raise OutOfMemoryError(f"arange: cannot allocate {size} values ({start} -> {end}, step {step}): computed "
                               f"at {_ARANGE_VALUE_BYTES} bytes each, they take more than the {ADDRESSABLE} bytes a "
                               f"device can address")
    return (size,)


defop(f"arange(Scalar start, Scalar? end=None, Scalar step=1, {_TAIL})", "creation", promotion=rules.creation,
      meta=_arange_meta,
      normalize=_arange_normalize, method=False, samples=_arange_samples, onnx=_arange_onnx,
      reference=lambda start, end=None, step=1, dtype=None, device=None:
      np.arange(0, start, step) if end is None else np.arange(start, end, step),
      doc="start, start + step, ... up to but excluding end; integer arguments give int64")


def _full_promotion(rt, op, args):
    """rules.creation, and PyTorch's refusal of a fill value the dtype cannot hold (full((2,), 300,
    dtype=int8)); ``fill_``, ``zero_`` and item assignment store numbers through full, so this checks them too."""
    compute, out = rules.creation(rt, op, args)
    value = args["fill_value"]
    if isinstance(value, (int, float)):  # a number (the conformance suite asks about dtypes with none)
        check_fits("full", value, out)
    elif isinstance(value, complex) and not out.is_complex:
        raise NumberOverflowError(f"full: value cannot be converted to type {out.name} without overflow: {value!r} "
                                  f"is complex")
    return compute, out


def _full_normalize(op, args):
    """A Python int beyond int64 stored in a floating dtype is that float (NumPy cannot convert it directly)."""
    value, dtype = args["fill_value"], args["dtype"]
    if value.__class__ is int and dtype is not None and dtype.is_floating_point and abs(value) >= 2 ** 63:
        args["fill_value"] = float(value)


defop(f"full(int[] size, Scalar fill_value, {_TAIL})", "creation", promotion=_full_promotion, meta=_size_meta,
      dtypes="all+complex", normalize=_full_normalize,
      samples=_full_samples, onnx=_full_onnx,
      method=False, reference=lambda size, value, dtype=None, device=None: np.full(size, value),
      doc="the dtype follows fill_value when not given: full((2,), 3) is int64")
defop(f"empty(int[] size, {_TAIL})", "creation", promotion=rules.creation, meta=_size_meta, method=False,
      dtypes="all+complex", samples=_sized_samples, onnx=_empty_onnx,
      doc="uninitialised memory")

defop(f"zeros(int[] size, {_TAIL})", "creation", kind="composite", promotion=rules.creation, meta=_size_meta,
      dtypes="all+complex", samples=_sized_samples,
      method=False, composite=lambda size, dtype=None, device=None: F.full(
          size, 0, dtype=dtype or get_default_dtype(), device=device),
      reference=lambda size, dtype=None, device=None: np.zeros(size))
defop(f"ones(int[] size, {_TAIL})", "creation", kind="composite", promotion=rules.creation, meta=_size_meta,
      dtypes="all+complex", samples=_sized_samples,
      method=False, composite=lambda size, dtype=None, device=None: F.full(
          size, 1, dtype=dtype or get_default_dtype(), device=device),
      reference=lambda size, dtype=None, device=None: np.ones(size))


def _eye(n, m=None, dtype=None, device=None):
    m = n if m is None else m
    rows = F.unsqueeze(F.arange(n, device=device), 1)
    return F.to_dtype(F.eq(rows, F.arange(m, device=device)), dtype or get_default_dtype())


defop(f"eye(int n, int? m=None, {_TAIL})", "creation", dtypes="all+complex", kind="composite", promotion=rules.creation,
      meta=lambda n, m=None, *rest: _size_meta((n, n if m is None else m)), composite=_eye, method=False,
      samples=_eye_samples,
      reference=lambda n, m=None, dtype=None, device=None: np.eye(n, m))


def _endpoints_dtype(start, end):
    """The default dtype of linspace's values: complex where an endpoint is (PyTorch's), else the default float."""
    return get_default_complex_dtype() if complex in (start.__class__, end.__class__) else get_default_dtype()


def _linspace_promotion(rt, op, args):
    dt = rules.requested_dtype(args) or _endpoints_dtype(args["start"], args["end"])
    return dt, dt


def _linspace(start, end, steps, dtype=None, device=None):
    dtype = dtype or _endpoints_dtype(start, end)
    if steps == 1:
        return F.full((1,), start, dtype=dtype, device=device)
    step = (end - start) / (steps - 1)
    index = F.arange(steps, dtype=dtype.to_real() if dtype.is_inexact else get_default_dtype(), device=device)
    from_start = F.add(F.mul(index, step), start)
    from_end = F.sub(end, F.mul(F.sub(steps - 1, index), step))
    return F.to_dtype(F.where(F.lt(index, steps // 2), from_start, from_end), dtype)


def _linspace_meta(start, end, steps, *rest):
    if steps < 0:
        raise ShapeError(f"linspace: steps must be non-negative, got {steps}")
    return (steps,)


defop(f"linspace(Scalar start, Scalar end, int steps, {_TAIL})", "creation", dtypes="all+complex", kind="composite",
      promotion=_linspace_promotion, meta=_linspace_meta, composite=_linspace, method=False,
      samples=_linspace_samples,
      reference=lambda start, end, steps, dtype=None, device=None: np.linspace(start, end, steps),
      doc="steps evenly spaced values from start to end inclusive")


# -- the *_like forms --------------------------------------------------------------------------

def _like_promotion(rt, op, args):
    dt = rules.requested_dtype(args) or args["input"].dtype
    return dt, dt


def _like(name, maker, extra="", reference=None, samples=_like_samples()):
    def composite(x, *args):
        *middle, dtype, device = args
        return maker(tuple(x.shape), *middle, dtype=dtype or x.dtype, device=device or x.device)
    defop(f"{name}(Tensor input{extra}, {_TAIL})", "creation", kind="composite", promotion=_like_promotion,
          dtypes="all+complex", meta=lambda x, *rest: tuple(x.shape), composite=composite, method=False,
          reference=reference, samples=samples,
          doc=f"like {name[:-5]}, with input's shape and (by default) its dtype and device")


_like("zeros_like", lambda size, dtype, device: F.full(size, 0, dtype=dtype, device=device),
      reference=lambda x, dtype=None, device=None: np.zeros(np.shape(x)))
_like("ones_like", lambda size, dtype, device: F.full(size, 1, dtype=dtype, device=device),
      reference=lambda x, dtype=None, device=None: np.ones(np.shape(x)))
_like("empty_like", lambda size, dtype, device: F.empty(size, dtype=dtype, device=device))
_like("full_like", lambda size, value, dtype, device: F.full(size, value, dtype=dtype, device=device),
      extra=", Scalar fill_value", samples=_like_samples(3),
      reference=lambda x, value, dtype=None, device=None: np.full(np.shape(x), value))
