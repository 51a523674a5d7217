"""Bitwise logic, shifts, gcd and lcm: integer (and bool) dtypes only, as in PyTorch.

The composites use only integer arithmetic every backend has. A value's two's-complement bits are
``floor(x / 2^k) mod 2`` (floor division shifts negatives arithmetically), taken for all k at once along a
new last axis; the sign bit weighs -2^(n-1). Backends with native bit operations override these.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import bool_, int64
from ...schema.meta import elementwise as broadcast_meta
from ...schema import defop
from ..namespace import F
from .float_args import as_tensors, promoted_dtype


def _bits(x):
    """The bits of integer tensor ``x`` along a new last axis (least significant first), as int64 0/1, and the
    weight of each bit (the top bit of a signed dtype weighs -2^(n-1))."""
    n = x.dtype.itemsize * 8
    column = F.unsqueeze(x, -1)
    powers = F.pow(2, F.arange(n - 1, device=x.device))
    low = F.remainder(F.floor_divide(column, powers), 2)
    if x.dtype.is_signed:  # the sign bit is the sign
        top, weight = F.to_dtype(F.lt(column, 0), int64), -(2 ** (n - 1))
    else:
        top, weight = F.remainder(F.floor_divide(F.to_dtype(column, int64), 2 ** (n - 1)), 2), 2 ** (n - 1)
    weights = F.cat([powers, F.full((1,), weight, dtype=int64, device=x.device)], 0)
    return F.cat([F.to_dtype(low, int64), top], -1), weights


def _from_bits(bits, weights, dtype):
    return F.to_dtype(F.sum(F.mul(bits, weights), -1), dtype)


def _bitwise(name, on_bits, on_bools):
    def composite(x, y):
        x, y = as_tensors(promoted_dtype(x, y), x, y)
        if x.dtype is bool_:
            return on_bools(x, y)
        (a, weights), (b, _) = _bits(x), _bits(y)
        return _from_bits(on_bits(a, b), weights, x.dtype)
    composite.__name__ = f"_{name}"
    return composite


_INTEGRAL = {"dtypes": "integral", "promotion": rules.same, "inplace": True, "differentiable": False}


def _bitwise_onnx(op_type, bool_op):
    """ONNX's Bitwise* take integers only; bools take the logical operator."""
    def lower(g, input, other):
        return g.op(bool_op if g.compute is bool_ else op_type, input, other)
    return lower


def _bitwise_not_onnx(g, input):
    return g.op("Not" if g.compute is bool_ else "BitwiseNot", input)


defop("bitwise_and(Tensor input, Tensor other)", "elementwise", kind="composite", meta=broadcast_meta("bitwise_and"),
      composite=_bitwise("bitwise_and", lambda a, b: F.mul(a, b), lambda a, b: F.logical_and(a, b)),
      reference=np.bitwise_and, onnx=_bitwise_onnx("BitwiseAnd", "And"), doc="integers and bools", **_INTEGRAL)
defop("bitwise_or(Tensor input, Tensor other)", "elementwise", kind="composite", meta=broadcast_meta("bitwise_or"),
      composite=_bitwise("bitwise_or", lambda a, b: F.maximum(a, b), lambda a, b: F.logical_or(a, b)),
      reference=np.bitwise_or, onnx=_bitwise_onnx("BitwiseOr", "Or"), doc="integers and bools", **_INTEGRAL)
defop("bitwise_xor(Tensor input, Tensor other)", "elementwise", kind="composite", meta=broadcast_meta("bitwise_xor"),
      composite=_bitwise("bitwise_xor", lambda a, b: F.remainder(F.add(a, b), 2), lambda a, b: F.logical_xor(a, b)),
      reference=np.bitwise_xor, onnx=_bitwise_onnx("BitwiseXor", "Xor"), doc="integers and bools", **_INTEGRAL)


def _bitwise_not(x):
    """-x - 1 in two's complement (wrapping, so uint8 gives 255 - x); logical not for bool."""
    if x.dtype is bool_:
        return F.logical_not(x)
    return F.sub(F.neg(x), 1)


defop("bitwise_not(Tensor input)", "elementwise", kind="composite", meta=broadcast_meta("bitwise_not"),
      composite=_bitwise_not, reference=np.invert, onnx=_bitwise_not_onnx, doc="~input", **_INTEGRAL)


# -- shifts ---------------------------------------------------------------------------------------------------

def _power_of_two(shift, dtype):
    """2^(s // 2) and 2^(s - s // 2) in ``dtype``: two factors, so that neither overflows for s < bits."""
    low = F.floor_divide(shift, 2)
    return F.to_dtype(F.pow(2, low), dtype), F.to_dtype(F.pow(2, F.sub(shift, low)), dtype)


def _shift_operands(x, shift):
    x, shift = as_tensors(promoted_dtype(x, shift), x, shift)
    if x.dtype is bool_:
        x, shift = F.to_dtype(x, int64), F.to_dtype(shift, int64)
    bits = x.dtype.itemsize * 8
    beyond = F.logical_or(F.lt(shift, 0), F.ge(shift, bits))  # PyTorch: every bit shifted out
    return x, F.where(beyond, F.zeros_like(shift), F.to_dtype(shift, int64)), beyond


def _left_shift(x, shift):
    """x * 2^s, wrapping in x's dtype; 0 for shifts outside [0, bits)."""
    dtype = promoted_dtype(x, shift)
    x, s, beyond = _shift_operands(x, shift)
    low, high = _power_of_two(s, x.dtype)
    out = F.mul(F.mul(x, low), high)
    return F.to_dtype(F.where(beyond, F.zeros_like(out), out), dtype)


def _right_shift(x, shift):
    """floor(x / 2^s), the arithmetic shift; 0 or -1 (by the sign) for shifts outside [0, bits)."""
    dtype = promoted_dtype(x, shift)
    x, s, beyond = _shift_operands(x, shift)
    low, high = _power_of_two(s, int64)
    wide = F.to_dtype(x, int64)
    out = F.floor_divide(F.floor_divide(wide, low), high)
    out = F.where(beyond, F.neg(F.to_dtype(F.lt(wide, 0), int64)), out)
    return F.to_dtype(out, dtype)


def _shift_reference(fn, left):
    def reference(x, s):
        x, s = np.broadcast_arrays(np.asarray(x), np.asarray(s))
        dtype = np.result_type(x, s)
        bits = dtype.itemsize * 8
        beyond = (s < 0) | (s >= bits)
        safe = np.where(beyond, 0, s).astype(dtype)
        with np.errstate(over="ignore"):
            out = fn(x.astype(dtype), safe)
        fill = np.zeros((), dtype) if left else np.where(x < 0, -1, 0).astype(dtype)
        return np.where(beyond, fill, out).astype(dtype)
    return reference


_SHIFTS = dict(kind="composite", promotion=rules.same, dtypes="int", inplace=True, differentiable=False,
               domain={"other": {"low": 0, "high": 9}})
defop("bitwise_left_shift(Tensor input, Tensor other)", "elementwise", meta=broadcast_meta("bitwise_left_shift"),
      composite=_left_shift, reference=_shift_reference(np.left_shift, True), doc="input << other", **_SHIFTS)
defop("bitwise_right_shift(Tensor input, Tensor other)", "elementwise",
      meta=broadcast_meta("bitwise_right_shift"), composite=_right_shift,
      reference=_shift_reference(np.right_shift, False), doc="input >> other (arithmetic)", **_SHIFTS)


# -- gcd and lcm ------------------------------------------------------------------------------------------------

def _euclid_steps(dtype) -> int:
    """The most remainder steps Euclid's algorithm takes on ``dtype``'s values: consecutive Fibonacci numbers are
    its worst case, and F(k) > 2^bits from k = 1.44 bits + 2."""
    return int(1.45 * dtype.itemsize * 8) + 3


def _gcd(x, y):
    """Euclid's algorithm on all elements at once, for as many steps as the worst case of the dtype needs (a fixed
    count, so the op reads no values to the host and exports whole); the result is non-negative."""
    x, y = as_tensors(promoted_dtype(x, y), x, y)
    a, b = F.abs(x), F.abs(y)
    a, b = F.add(a, F.zeros_like(b)), F.add(b, F.zeros_like(a))  # broadcast both
    zero, one = F.zeros_like(b), F.ones_like(b)
    for _ in range(_euclid_steps(x.dtype)):
        done = F.eq(b, 0)
        a, b = F.where(done, a, b), F.where(done, zero, F.remainder(a, F.where(done, one, b)))
    return a


def _lcm(x, y):
    """|x / gcd * y|, 0 where either is 0."""
    x, y = as_tensors(promoted_dtype(x, y), x, y)
    divisor = _gcd(x, y)
    safe = F.where(F.eq(divisor, 0), F.ones_like(divisor), divisor)
    return F.abs(F.mul(F.floor_divide(x, safe), y))


_GCD = dict(kind="composite", promotion=rules.same, dtypes="int", inplace=True, differentiable=False)
defop("gcd(Tensor input, Tensor other)", "elementwise", meta=broadcast_meta("gcd"), composite=_gcd,
      reference=np.gcd, doc="greatest common divisor, non-negative; gcd(0, 0) = 0", **_GCD)
defop("lcm(Tensor input, Tensor other)", "elementwise", meta=broadcast_meta("lcm"), composite=_lcm,
      reference=np.lcm, doc="least common multiple, non-negative; 0 where either is 0", **_GCD)
