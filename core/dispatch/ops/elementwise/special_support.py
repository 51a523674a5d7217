"""What the special-function composites share: computing in a float dtype, polynomials, series, constants.

The special functions are written in Ember ops so that they run on every backend. Each works in floating
point whatever it is given: integer and bool tensors compute in the default float dtype (or the promoted
float type of the other operands), and half precision in float32, rounded once at the end, as PyTorch's
kernels do.
"""
from __future__ import annotations

import functools
import math
from typing import Callable

from ...execution import links
from ...schema.dtypes import get_default_dtype
from ...schema.promotion import result_type_of
from ..namespace import F
from .opmath import opmath_dtype

SQRT_PI = math.sqrt(math.pi)
SQRT_2 = math.sqrt(2.0)
SQRT_2PI = math.sqrt(2.0 * math.pi)
EULER_GAMMA = 0.5772156649015329


def is_tensor(value) -> bool:
    return hasattr(value, "_data")


def floating(composite: Callable) -> Callable:
    """``composite`` run on its tensor arguments cast to one working float dtype, its result rounded to the
    promoted float (or complex) type of those tensors (integers and bools promote to the default float dtype;
    float16 and bfloat16 work in float32). Python numbers and attributes pass unchanged."""
    @functools.wraps(composite)
    def run(*args):
        tensors = [a for a in args if is_tensor(a)]
        out = result_type_of([t.dtype for t in tensors if t.ndim], [t.dtype for t in tensors if not t.ndim], [])
        if out.kind not in ("float", "complex"):  # (complex stays complex: exp2, sinc)
            out = get_default_dtype()
        work = opmath_dtype(out)
        result = composite(*(F.to_dtype(a, work) if is_tensor(a) and a.dtype is not work else a for a in args))
        if isinstance(result, tuple):
            return tuple(r if r.dtype is out else F.to_dtype(r, out) for r in result)
        return result if result.dtype is out else F.to_dtype(result, out)
    return run


def without_gradient(composite: Callable) -> Callable:
    """``composite`` run without recording its inner ops: for ops PyTorch gives no derivative (the Bessel
    functions of torch.special), whose results then do not require grad, as PyTorch's do not."""
    @functools.wraps(composite)
    def run(*args):
        with links.recorder.no_grad():
            return composite(*args)
    return run


def as_tensors(first, second):
    """Both operands as tensors: a Python number takes the other's dtype, device and shape."""
    if not is_tensor(first):
        first = F.full_like(second, first)
    if not is_tensor(second):
        second = F.full_like(first, second)
    return first, second


def horner(x, coefficients):
    """c0 + c1 x + c2 x² + ... for Python float coefficients (lowest first)."""
    out = F.full_like(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        out = F.add(F.mul(out, x), c)
    return out


def ratio_series(y, ratios):
    """Σₖ (r₁ r₂ ⋯ rₖ) yᵏ for Python float ratios rₖ of successive coefficients (the k = 0 term is 1),
    nested as 1 + r₁y (1 + r₂y (1 + ⋯)).

    For positive series whose coefficients shrink factorially (1/(k! (k+1)!) is a float32 subnormal from
    k = 20), instead of ``horner`` on the coefficients: here every constant is a ratio of moderate size and
    every bracket is at least 1, so nothing that matters is subnormal. CUDA kernels flush float32
    subnormals to zero (CuPy compiles them with -ftz=true), which would drop such coefficients, and with
    them terms that matter when y is large."""
    out = F.add(F.mul(y, ratios[-1]), 1.0)
    for r in reversed(ratios[:-1]):
        out = F.add(F.mul(F.mul(out, y), r), 1.0)
    return out


def select(*pairs_and_default):
    """``select((cond1, a), (cond2, b), default)``: the first value whose condition holds, elementwise."""
    *pairs, out = pairs_and_default
    for condition, value in reversed(pairs):
        out = F.where(condition, value, out)
    return out


def scipy_special():
    """SciPy's special-function module, imported on first use (the references need it, the ops do not)."""
    from scipy import special
    return special


__all__ = ["floating", "without_gradient", "as_tensors", "horner", "ratio_series", "select", "is_tensor",
           "scipy_special", "SQRT_PI", "SQRT_2", "SQRT_2PI", "EULER_GAMMA"]
