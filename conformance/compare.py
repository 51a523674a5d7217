"""Comparing a backend's output with the reference: per-dtype tolerances, NaN positions equal.

``OpDef.tolerances`` overrides the defaults per op: ``{"float16": (rtol, atol), ...}`` (keys are
dtype names or ember dtypes).
"""
from __future__ import annotations

import numpy as np

from .oracle import numpy_dtype

#: (rtol, atol) by dtype name. Half precision is loose (one rounding of a value up to ~10 is
#: already 5e-3 in float16); float32 is tight and float64 tighter. Integers and bools are exact.
DEFAULT_TOLERANCES = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (4e-2, 4e-2),
    "float32": (1e-5, 1e-5),
    "float64": (1e-10, 1e-10),
}


def tolerance(op, dt) -> tuple[float, float]:
    """(rtol, atol) for ``op``'s outputs of dtype ``dt``; a complex dtype falls back to its component dtype's
    (complex64 is compared as float32 is, unless the op names complex64 itself)."""
    for candidate in (dt, dt.to_real()):
        for key, value in op.tolerances.items():
            if key == candidate.name or key is candidate:
                return value
        if candidate.name in DEFAULT_TOLERANCES:
            return DEFAULT_TOLERANCES[candidate.name]
    return (0.0, 0.0)


def mismatch(actual: np.ndarray, expected: np.ndarray, dt, rtol: float, atol: float) -> str | None:
    """None when ``actual`` (a backend output of dtype ``dt``) matches ``expected``, else why not.

    The expected values are first rounded to ``dt``, as the backend's result was.
    """
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != reference shape {expected.shape}"
    with np.errstate(all="ignore"):
        rounded = expected.astype(numpy_dtype(dt))
    if not dt.is_floating_point and not dt.is_complex:
        bad = actual != rounded
    else:
        bad = _differ(actual, rounded, rtol, atol)
    if not np.any(bad):
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(np.sum(bad))} of {bad.size} values differ (rtol={rtol}, atol={atol}); first at index "
            f"{where}: got {actual[where]!r}, expected {rounded[where]!r}")


def _differ(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Where floating or complex values differ beyond the tolerance: NaN equals NaN, an infinity only itself.
    A complex value with NaN in either part is a complex NaN, equal to any other (``torch.isclose``'s rule:
    C99's special values put NaN in one part or both, and libraries differ on which)."""
    wide = np.complex128 if actual.dtype.kind == "c" or expected.dtype.kind == "c" else np.float64
    with np.errstate(all="ignore"):
        return ~np.isclose(actual.astype(wide), expected.astype(wide), rtol=rtol, atol=atol, equal_nan=True)
