"""A branch-free float32 exp: Cody-Waite range reduction, a polynomial for e^r, and 2^n from the exponent bits.

Why: numba compiles ``np.exp`` of a float32 to a scalar libm ``expf`` call (about 2.3 ns an element), which
also keeps LLVM from vectorizing the fused loop around it; this form is multiplies, adds, integer shifts,
bit casts and compare-selects, all of which compile to SIMD code.

The steps, for x clamped to [LOW, HIGH] (a NaN becomes HIGH there and is put back at the end):

- n = round(x·log2 e), rounded to nearest even by adding and subtracting SHIFTER (1.5·2^23);
- r = x − n·LN2_HI − n·LN2_LO: LN2_HI is ln 2 with its low 8 significand bits cleared, so n·LN2_HI is
  exact for |n| ≤ 256 and the first subtraction is exact; |r| ≤ ln2/2 (up to a rounding);
- e^r ≈ 1 + (r + r²·Q(r)), Q of degree 4 (so degree 6 in all): Ember's own fit (``fit_q``), by float64
  least squares on the relative error at Chebyshev nodes of [−ln2/2, ln2/2], rounded to float32; its
  truncation error is 0.06 of a float32 half-ulp, so rounding dominates;
- 2^n as two factors 2^(n>>1) and 2^(n−(n>>1)), each built from its exponent bits: both stay normal for
  n in [−150, 128], the first product is exact, and the second rounds once, so results in the subnormal
  range are rounded correctly too (not flushed to zero) and results beyond float32's range overflow to inf.

LOW = −104 lies below ln(2^−150), where exp rounds to 0; HIGH = 89 lies above ln(float32 max), where it
rounds to inf; so exp(−inf) = 0, exp(inf) = inf and NaN stays NaN. Measured over every float32
(tests/test_fast_exp.py samples them): at most MAX_ULP float32 steps from the correctly rounded exp.

Both evaluations below do the same float32 operations in the same order (no fused multiply-adds), so they
agree bit for bit; the scalar source compiles with numba (its ``.view`` of a scalar is an LLVM bitcast).
"""
from __future__ import annotations

import math

import numpy as np

#: arguments are clamped to [LOW, HIGH]: exp rounds to 0 below and to inf above (in float32)
LOW, HIGH = -104.0, 89.0
#: float32(log2 e)
LOG2E = float(np.float32(1 / math.log(2)))
#: adding and subtracting 1.5·2^23 rounds a float32 of magnitude below 2^22 to the nearest integer
SHIFTER = 12582912.0
#: ln 2 split in two float32s: the high part keeps 16 significand bits (n·LN2_HI is exact for |n| ≤ 256)
LN2_HI = float((np.float32(math.log(2)).view(np.int32) & np.int32(-256)).view(np.float32))
LN2_LO = float(np.float32(math.log(2) - LN2_HI))
#: Q's coefficients in ascending powers of r (float32 values; e^r ≈ 1 + r + r²·Q(r)), ``fit_q()``'s
Q = (0.49999988079071045, 0.166665181517601, 0.04166953265666962, 0.008368915878236294, 0.0013751407386735082)
#: elements per block of exp_float32's passes (a few float32 blocks fit a 1 MiB L2 cache)
BLOCK = 1 << 15
#: float32's exponent bias and the position of its exponent field
_BIAS, _MANTISSA_BITS = 127, 23


def fit_q(degree: int = len(Q) - 1, nodes: int = 4001) -> tuple[float, ...]:
    """Q's coefficients, fitted again: float64 least squares of the relative error of ``1 + r + r²·Q(r)``
    against e^r at Chebyshev nodes of [−ln2/2, ln2/2], rounded to float32."""
    half = math.log(2) / 2
    r = half * np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    target = (np.exp(r) - 1 - r) / r ** 2  # Q(r), fitted with weights r²/e^r: the relative error of e^r
    weight = r ** 2 / np.exp(r)
    powers = np.stack([r ** k for k in range(degree + 1)], axis=1)
    coefficients, *_ = np.linalg.lstsq(powers * weight[:, None], target * weight, rcond=None)
    return tuple(float(np.float32(c)) for c in coefficients)


def exp_float32(x: np.ndarray) -> np.ndarray:
    """exp of a float32 array, elementwise with NumPy, as a new float32 array of x's shape (the reference
    the scalar source is tested against)."""
    x = np.asarray(x, np.float32)
    out = np.empty(x.shape, np.float32)
    values, results = x.reshape(-1), out.reshape(-1)
    for start in range(0, values.size, BLOCK):
        stop = min(start + BLOCK, values.size)
        results[start:stop] = _exp_block(values[start:stop])
    return out


def _exp_block(x: np.ndarray) -> np.ndarray:
    f, i = np.float32, np.int32
    c = np.where(x < f(HIGH), x, f(HIGH))
    c = np.where(c > f(LOW), c, f(LOW))
    k = (c * f(LOG2E) + f(SHIFTER)) - f(SHIFTER)
    r = (c - k * f(LN2_HI)) - k * f(LN2_LO)
    q = np.full_like(r, f(Q[-1]))
    for coefficient in Q[-2::-1]:  # Horner's scheme
        q = q * r + f(coefficient)
    p = f(1) + (r + (r * r) * q)
    n = k.astype(np.int32)
    half = n >> i(1)
    first = ((half + i(_BIAS)) << i(_MANTISSA_BITS)).view(np.float32)
    second = ((n - half + i(_BIAS)) << i(_MANTISSA_BITS)).view(np.float32)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, as exp
        return np.where(x != x, x, (p * first) * second)


def python_source(name: str) -> str:
    """Python source of ``def name(x)``: exp of one np.float32 value, in plain Python or compiled by numba
    (where it vectorizes)."""
    def f(value: float) -> str:
        return f"np.float32({value!r})"

    def i(value: int) -> str:
        return f"np.int32({value})"

    lines = [f"def {name}(x):",
             f"    c = x if x < {f(HIGH)} else {f(HIGH)}",
             f"    c = c if c > {f(LOW)} else {f(LOW)}",
             f"    k = np.float32(np.float32(c * {f(LOG2E)}) + {f(SHIFTER)})",
             f"    k = np.float32(k - {f(SHIFTER)})",
             f"    r = np.float32(c - np.float32(k * {f(LN2_HI)}))",
             f"    r = np.float32(r - np.float32(k * {f(LN2_LO)}))",
             f"    q = {f(Q[-1])}"]
    lines += [f"    q = np.float32(np.float32(q * r) + {f(coefficient)})" for coefficient in Q[-2::-1]]
    lines += [f"    p = np.float32({f(1.0)} + np.float32(r + np.float32(np.float32(r * r) * q)))",
              "    n = np.int32(k)",
              f"    half = np.int32(n >> {i(1)})",
              f"    first = np.int32(np.int32(half + {i(_BIAS)}) << {i(_MANTISSA_BITS)}).view(np.float32)",
              f"    second = np.int32(np.int32(np.int32(n - half) + {i(_BIAS)}) << {i(_MANTISSA_BITS)}).view(np.float32)",
              "    y = np.float32(np.float32(p * first) * second)",
              "    return x if x != x else y"]
    return "\n".join(lines) + "\n"


__all__ = ["BLOCK", "HIGH", "LN2_HI", "LN2_LO", "LOG2E", "LOW", "Q", "SHIFTER", "exp_float32", "fit_q",
           "python_source"]
