"""``ember.allclose`` and ``ember.equal``: whole-tensor answers as Python bools, built on Ember ops."""
from __future__ import annotations

from .dispatch.ops import F
from .tensor import Tensor


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element pair is close in ``isclose``'s sense (shapes broadcast, one dtype)."""
    return bool(F.all(F.isclose(input, other, rtol, atol, equal_nan)).item())


def equal(input: Tensor, other: Tensor) -> bool:
    """Whether both have one shape and equal elements (dtypes promote; NaN is never equal)."""
    for name, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"equal(): argument '{name}' must be Tensor, not {type(value).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(F.all(F.eq(input, other)).item())

