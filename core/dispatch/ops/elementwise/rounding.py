"""Rounding, sign and floating-point representation: trunc, frac, fmod, copysign, signbit, frexp, ldexp,
nextafter. Composites in Ember ops; exact, because each step is (floor, ceil, remainder, powers of two)."""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import float32, float64, int32
from ...formula_composite import formula_composite
from ...schema.meta import elementwise as broadcast_meta, shape
from ...schema import Sample, defop
from ..namespace import F
from .complex_support import refusing_complex
from .float_args import LARGEST, as_tensors, float_dtype_of, floating, is_tensor, promoted_dtype


def _zero_grad(grad):
    return F.zeros_like(grad)


defop("trunc(Tensor input)", "elementwise", kind="composite", dtypes="numeric",
      promotion=refusing_complex(rules.same, "trunc is not supported for complex inputs"),
      meta=broadcast_meta("trunc"), composite=formula_composite("trunc"), reference=np.trunc, derivative=_zero_grad,
      inplace=True,
      scalar="where(input < 0, ceil(input), floor(input))",
      doc="rounds toward zero; integers pass through")
defop("frac(Tensor input)", "elementwise", kind="composite", promotion=rules.same, dtypes="float",
      meta=broadcast_meta("frac"), composite=lambda x: F.sub(x, F.trunc(x)), reference=lambda x: x - np.trunc(x),
      derivative=lambda grad: grad, inplace=True, scalar="input - where(input < 0, ceil(input), floor(input))",
      doc="input - trunc(input), with the sign of input")


def _fmod(x, y):
    """C's fmod: the remainder of the magnitudes (exact: remainder of positive operands is fmod), with the
    dividend's sign (a zero keeps it too)."""
    x, y = as_tensors(promoted_dtype(x, y), x, y)
    magnitude = F.remainder(F.abs(x), F.abs(y))
    if x.dtype.is_floating_point:
        return F.copysign(magnitude, x)
    return F.where(F.lt(x, 0), F.neg(magnitude), magnitude)


def _fmod_reference(x, y):
    return np.fmod(x, y)


defop("fmod(Tensor input, Tensor other)", "elementwise", kind="composite", promotion=rules.same,
      dtypes="numeric", meta=broadcast_meta("fmod"), composite=_fmod, reference=_fmod_reference, inplace=True,
      domain={"other": {"nonzero": True}},
      derivative={"input": lambda grad: grad,
                  "other": lambda grad, input, other: F.neg(F.mul(grad, F.trunc(F.div(input, other))))},
      doc="C's remainder: the sign of input (remainder takes the sign of other)")


def _signbit(x):
    """x < 0, or a negative zero (1 / -0.0 is -inf)."""
    if not x.dtype.is_floating_point:
        return F.lt(x, 0)
    return F.logical_or(F.lt(x, 0), F.logical_and(F.eq(x, 0), F.lt(F.reciprocal(x), 0)))


defop("signbit(Tensor input)", "elementwise", kind="composite", dtypes="all",
      promotion=refusing_complex(rules.to_bool, "signbit is not implemented for complex tensors."),
      meta=broadcast_meta("signbit"), composite=_signbit, reference=np.signbit, differentiable=False,
      # pow(x, -1), not 1 / x: a formula divides in the compute dtype, and an integer 1 / 0 traps in C; integer
      # pow is not rendered, so integer signbit runs op by op
      scalar="input < 0 or (input == 0 and pow(input, -1) < 0)",
      doc="true where the sign bit is set, -0.0 included (the sign of a NaN is not read)")


@floating
def _copysign(x, y):
    magnitude = F.abs(x)
    return F.where(F.signbit(y), F.neg(magnitude), magnitude)


def _copysign_derivative(grad, input, result):
    """result / input where input is nonzero (the sign it was given), 0 at 0, as PyTorch."""
    return F.where(F.eq(input, 0), F.zeros_like(result), F.mul(grad, F.div(result, input)))


defop("copysign(Tensor input, Tensor other)", "elementwise", kind="composite", promotion=rules.to_float,
      meta=broadcast_meta("copysign"), composite=_copysign, reference=np.copysign, inplace=True,
      scalar="where(other < 0 or (other == 0 and 1 / other < 0), -abs(input), abs(input))",
      derivative={"input": _copysign_derivative, "other": lambda grad: F.zeros_like(grad)},
      doc="the magnitude of input with the sign of other (-0.0 counts as negative)")


# -- the binary representation: frexp, ldexp, nextafter -----------------------------------------------------

def _exponent(magnitude):
    """floor(log2(m)) + 1 for positive finite m, corrected where log2 rounds across a power of two."""
    e = F.add(F.floor(F.log2(magnitude)), 1)
    mantissa = _scaled_down(magnitude, e)
    e = F.where(F.ge(mantissa, 1), F.add(e, 1), e)
    return F.where(F.lt(_scaled_down(magnitude, e), 0.5), F.sub(e, 1), e)


def _scaled_down(x, e):
    """x / 2^e in two halves, so that neither power overflows (2^1024 does not exist in float64)."""
    half = F.floor(F.div(e, 2))
    return F.div(F.div(x, F.pow(2.0, half)), F.pow(2.0, F.sub(e, half)))


def _frexp(x):
    """(mantissa, exponent) with x = mantissa * 2^exponent and 0.5 <= |mantissa| < 1; zeros, infinities and
    NaN are their own mantissa with exponent 0."""
    special = F.logical_or(F.eq(x, 0), F.logical_not(F.isfinite(x)))
    magnitude = F.where(special, F.ones_like(x), F.abs(x))
    e = _exponent(magnitude) if x.dtype.itemsize > 2 else _exponent(F.to_dtype(magnitude, float32))
    e = F.where(special, F.zeros_like(e), e)
    mantissa = F.where(special, x, F.copysign(_scaled_down(magnitude, F.to_dtype(e, magnitude.dtype)), x))
    return F.to_dtype(mantissa, x.dtype), F.to_dtype(e, int32)


def _frexp_reference(x):
    mantissa, exponent = np.frexp(x)
    return mantissa, exponent.astype(np.int32)


def _frexp_derivative(grads, results):
    """mantissa = x / 2^exponent, the exponent constant almost everywhere."""
    return F.div(grads[0], F.pow(2.0, F.to_dtype(results[1], grads[0].dtype)))


defop("frexp(Tensor input)", "elementwise", kind="composite", dtypes="float", outputs=("mantissa", "exponent"),
      promotion=refusing_complex(lambda rt, op, args: (rt, (rt, int32)), "torch.frexp() only supports "
                                 "floating-point dtypes"), meta=lambda x: (shape(x), shape(x)), composite=_frexp,
      reference=_frexp_reference, derivative=_frexp_derivative,
      doc="mantissa in [0.5, 1) and int32 exponent, input = mantissa * 2**exponent")


def _ldexp(x, other):
    """input * 2^other in the float dtype of the result; an integer exponent scales in two halves, so the result
    is exact wherever it is representable (2^1024 is not, 0.75 * 2^1024 is)."""
    integral = (other.dtype.kind in ("int", "bool")) if is_tensor(other) else isinstance(other, int)
    dt = float_dtype_of(x, other)
    x, exponent = as_tensors(dt, x, other)
    if not integral or dt.kind == "complex":  # (complex numbers have no floor: scaled by 2^other at once)
        return F.mul(x, F.pow(2.0, exponent))
    half = F.floor(F.div(exponent, 2))
    return F.mul(F.mul(x, F.pow(2.0, half)), F.pow(2.0, F.sub(exponent, half)))


defop("ldexp(Tensor input, Tensor other)", "elementwise", kind="composite", promotion=rules.to_float,
      dtypes="all+complex",
      meta=broadcast_meta("ldexp"), composite=_ldexp, reference=lambda x, e: x * np.power(2.0, e), inplace=True,
      domain={"other": {"low": -8, "high": 8}}, doc="input * 2**other")


_BITS = {float64: (52, -1074), float32: (23, -149)}  # stored mantissa bits, exponent of the smallest subnormal


def _nextafter(x, y):
    """x moved one representable step toward y: the spacing at x is 2^(exponent - 1 - mantissa bits), halved
    going toward zero from a power of two, never below the smallest subnormal."""
    dt = float_dtype_of(x, y)  # PyTorch's promotion: a 0-d uint8 x with a float32 y computes in float32
    x, y = as_tensors(dt, x, y)
    bits, smallest = _BITS.get(dt, (10, -24) if dt.name == "float16" else (7, -133))
    mantissa, e = _frexp(F.where(F.eq(x, 0), F.ones_like(x), x))
    e = F.to_dtype(e, dt)
    toward_zero = F.ne(F.lt(x, y), F.gt(x, 0))
    power_of_two = F.logical_and(toward_zero, F.eq(F.abs(mantissa), 0.5))
    step = F.maximum(F.sub(F.sub(e, 1 + bits), F.to_dtype(power_of_two, dt)), smallest)
    spacing = F.pow(2.0, step)
    out = F.where(F.lt(x, y), F.add(x, spacing), F.sub(x, spacing))
    tiniest = F.mul(F.pow(2.0, F.full((), float(smallest), dtype=dt, device=x.device)), F.sign(F.sub(y, x)))
    largest = F.copysign(F.full((), LARGEST[dt.name], dtype=dt, device=x.device), x)
    out = F.where(F.eq(x, 0), tiniest, out)
    out = F.where(F.isinf(x), largest, out)
    out = F.where(F.eq(x, y), y, out)
    return F.where(F.logical_or(F.isnan(x), F.isnan(y)), F.add(x, y), out)


def _nextafter_reference(x, y):
    """NumPy's, but from an infinity toward a finite value the largest finite value (NumPy's float16 stays)."""
    out = np.nextafter(x, y)
    leaving_infinity = np.isinf(x) & (x != y) & ~np.isnan(y)
    return np.where(leaving_infinity, np.copysign(np.finfo(np.result_type(x, y)).max, x), out)


def _nextafter_samples(make, dtype):
    x = make((2, 3))
    if not dtype.is_floating_point:  # for the refusal of other dtypes
        yield Sample((x, x))
        return
    yield Sample((x, F.add(x, 1)), note="upward")
    yield Sample((x, F.sub(x, 1)), note="downward")
    powers = F.cat([F.full((1,), v, dtype=dtype, device=x.device) for v in (0.5, -0.5, 4.0, -0.25)], 0)
    yield Sample((powers, F.zeros_like(powers)), note="powers of two toward zero")


defop("nextafter(Tensor input, Tensor other)", "elementwise", kind="composite", promotion=rules.same,
      dtypes="float", meta=broadcast_meta("nextafter"), composite=_nextafter, reference=_nextafter_reference,
      differentiable=False, inplace=True, samples=_nextafter_samples,
      domain={"input": {"low": -4.0, "high": 4.0}},  # the references of half precision run in float64, whose
      # largest value is no float16's: the infinities are checked against PyTorch in tests/test_math_surface.py
      doc="the next representable value after input toward other, in input's dtype")
