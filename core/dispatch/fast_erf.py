"""A branch-free float32 erf: ``x * P(x²) / Q(x²)`` on x clamped to [-4, 4], the result clamped to [-1, 1].

Why: a scalar libm ``erf`` call keeps numba from vectorizing a fused CPU loop (GELU's exact form spent 4 ns
an element in it) and SciPy's erf takes about 15 ns an element; this form is multiplies, adds, one division
and compare-selects, which compile to SIMD code and run as a few NumPy passes.

The coefficients are Ember's own fit: P/Q (degrees 7 and 4 in t = x², Q(0) = 1) minimizes the relative error
against erf(x)/x on [0, 4], by float64 linearized least squares with Lawson reweighting towards minimax, then
rounded to float32. erf(x) rounds to ±1 in float32 for |x| > 3.92, so clamping the argument at 4 loses
nothing (and keeps t finite for ±inf); clamping the result keeps rounding from giving |erf| > 1. The
selects pass NaN through, and -0.0 stays -0.0. Measured over every float32 (tests/test_fast_erf.py samples
them): at most 7 ulp from the correctly rounded erf (99.85% within 2), at most 3.93e-7 absolute error.

Both evaluations below do the same float32 operations in the same order, so they agree bit for bit.
"""
from __future__ import annotations

import numpy as np

#: |x| beyond which erf(x) is ±1 in float32
CLAMP = 4.0
#: elements per block of erf_float32's passes (four float32 blocks fit a 1 MiB L2 cache)
BLOCK = 1 << 16
#: P's coefficients in ascending powers of t = x² (float32 values)
P = (1.1283791065216064, 0.14450131356716156, 0.04461681842803955, 0.0017036908539012074,
     0.00013545177353080362, -3.558356638677651e-06, 7.669500234896987e-08, -7.73678510146425e-10)
#: Q's coefficients in ascending powers of t (float32 values)
Q = (1.0, 0.46139389276504517, 0.0933409109711647, 0.010288466699421406, 0.0005774319870397449)


def erf_float32(x: np.ndarray) -> np.ndarray:
    """erf of a float32 array, elementwise with NumPy, as a new float32 array of x's shape.

    Blocks of BLOCK elements: the ~30 passes over each block then stay in the cache (2.5x faster on
    (64, 32, 192) than whole-array passes, measured)."""
    x = np.asarray(x)
    out = np.empty(x.shape, np.float32)
    values, results = x.reshape(-1), out.reshape(-1)
    scratch = [np.empty(min(values.size, BLOCK), np.float32) for _ in range(3)]
    for start in range(0, values.size, BLOCK):
        stop = min(start + BLOCK, values.size)
        _erf_block(values[start:stop], results[start:stop], *(s[:stop - start] for s in scratch))
    return out


def _erf_block(x: np.ndarray, p: np.ndarray, c: np.ndarray, t: np.ndarray, q: np.ndarray) -> None:
    """erf(x) into p (c, t and q: scratch of x's size)."""
    f = np.float32
    np.maximum(x, f(-CLAMP), out=c)
    np.minimum(c, f(CLAMP), out=c)
    np.multiply(c, c, out=t)
    for value, coefficients in ((p, P), (q, Q)):
        np.multiply(t, f(coefficients[-1]), out=value)
        for k in range(len(coefficients) - 2, -1, -1):  # Horner's scheme, in place
            value += f(coefficients[k])
            if k:
                value *= t
    p *= c
    p /= q
    np.minimum(p, f(1), out=p)
    np.maximum(p, f(-1), out=p)


def python_source(name: str) -> str:
    """Python source of ``def name(x)``: erf of one np.float32 value, in plain Python or compiled by numba
    (where the selects and the single division vectorize)."""
    def const(value: float) -> str:
        return f"np.float32({value!r})"

    lines = [f"def {name}(x):",
             f"    c = {const(CLAMP)} if x > {const(CLAMP)} else x",
             f"    c = {const(-CLAMP)} if c < {const(-CLAMP)} else c",
             "    t = np.float32(c * c)"]
    for letter, coefficients in (("p", P), ("q", Q)):
        lines.append(f"    {letter} = np.float32(t * {const(coefficients[-1])})")
        for k in range(len(coefficients) - 2, -1, -1):
            lines.append(f"    {letter} = np.float32({letter} + {const(coefficients[k])})")
            if k:
                lines.append(f"    {letter} = np.float32({letter} * t)")
    lines += ["    r = np.float32(np.float32(p * c) / q)",
              "    r = np.float32(1.0) if r > np.float32(1.0) else r",
              "    return np.float32(-1.0) if r < np.float32(-1.0) else r"]
    return "\n".join(lines) + "\n"


__all__ = ["BLOCK", "CLAMP", "P", "Q", "erf_float32", "python_source"]
