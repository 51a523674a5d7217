"""Map a function over the tensors of nested call arguments (tuples, named tuples, lists, dicts)."""
from __future__ import annotations

from typing import Any, Callable

from ..tensor import Tensor


def map_tensors(obj: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """``obj`` with every tensor in it replaced by ``fn(tensor)``; containers rebuilt, other values kept."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(map_tensors(item, fn) for item in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_tensors(item, fn) for item in obj)
    if isinstance(obj, dict):
        return {key: map_tensors(value, fn) for key, value in obj.items()}
    return obj
