"""Autocast as a dispatch mode: each op call is cast by the category its schema declares.

The mode sees every op call while an autocast region is enabled for some device type. An op whose
declaration has no category on the call's device type runs as called; the ops it runs internally (a
composite's decomposition) come back to the mode, as PyTorch's decompositions meet autocast again.
An op with a category has its floating operands cast first, then runs with the mode standing aside,
so neither the casts nor the op's insides are cast again:

- "lower": operands to the region's dtype (bfloat16 or float16);
- "float32": low-precision operands to float32 (for an op with a ``dtype`` argument, only where it is
  not given: that argument already names the computation dtype);
- "promote": operands to the widest floating dtype among them;
- "banned": refused, as PyTorch refuses ``binary_cross_entropy`` under CUDA autocast;
- a dtype (a custom op's ``register_autocast(op, device_type, cast_inputs)``): operands to that dtype.

Only floating operands that are not float64, on the region's device type, are cast (PyTorch's rule).
The casts are ordinary ``to_dtype`` calls, so autograd records them and gradients reach float32
weights as float32. Casts of weights (leaves that require grad) to the low dtype are cached until the
outermost region exits, as PyTorch caches them, so a weight used by many calls is cast once.
"""
from __future__ import annotations

import weakref
from typing import Any

from ..dispatch.execution import links
from ..dispatch.schema.dtypes import float32, float64
from ..dispatch.schema.errors import EmberError, describe
from ..dispatch.execution.modes import DispatchMode, standing_aside, tensors_in
from ..dispatch.ops import F
from ..dispatch.schema.promotion import promote_types


class AutocastMode(DispatchMode):
    """The one autocast mode (``MODE``); ``ember.autocast`` regions set ``dtypes`` and enter it."""

    observes_nested = True

    def __init__(self) -> None:
        self.dtypes: dict = {}  # device type -> the low dtype of its enabled region
        self.cache_enabled = True
        self._cache: dict = {}  # (id(weight), grad mode) -> (weak reference, version, cast)

    def __torch_dispatch__(self, func, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        op = func.op
        if op.autocast_policy is None:
            return func(*args, **kwargs)
        device_type = next((t._device.type for t in tensors_in(args, kwargs)), None)
        low = self.dtypes.get(device_type)
        category = op.autocast_category(device_type) if low is not None else None
        if category is None:
            return func(*args, **kwargs)
        if category == "banned":
            raise EmberError(f"{op.name} is unsafe to autocast on {device_type} (PyTorch refuses it too); "
                             f"inputs: {', '.join(describe(t) for t in tensors_in(args, kwargs))}. Compute it "
                             f"outside the autocast region, or use its logits form (binary_cross_entropy_with_logits)")
        with standing_aside(self):
            target = self._target(op, category, low, device_type, args, kwargs)
            if target is not None:
                args = tuple(self._cast_value(v, target, device_type) for v in args)
                kwargs = {k: self._cast_value(v, target, device_type) for k, v in kwargs.items()}
            return func(*args, **kwargs)

    @staticmethod
    def _target(op, category, low, device_type: str, args: tuple, kwargs: dict):
        """The dtype the call's eligible operands are cast to; None where nothing is cast."""
        if category.__class__ is not str:  # a dtype: a custom op's cast_inputs (ember.library.register_autocast)
            return category
        if category == "lower":
            return low
        if category == "float32":
            dtype_at = op.param_index.get("dtype")
            given = kwargs.get("dtype") if "dtype" in kwargs else (
                args[dtype_at] if dtype_at is not None and dtype_at < len(args) else None)
            return float32 if given is None else None
        widest = low
        for t in tensors_in(args, kwargs):
            if _eligible(t, device_type):
                widest = promote_types(widest, t._dtype)
        return widest

    def _cast_value(self, value, target, device_type: str):
        Tensor = links.tensor.type
        if isinstance(value, Tensor):
            return self._cast(value, target, device_type)
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            return type(value)(self._cast(v, target, device_type) if isinstance(v, Tensor) else v for v in value)
        return value

    def _cast(self, t, target, device_type: str):
        if t._dtype is target or not _eligible(t, device_type):
            return t
        cacheable = (self.cache_enabled and target is self.dtypes.get(device_type) and t._dtype is float32
                     and t.requires_grad and t.grad_fn is None and t._base is None)
        if not cacheable:
            return F.to_dtype(t, target)
        key = (id(t), links.recorder.state.enabled)
        hit = self._cache.get(key)
        if hit is not None and hit[0]() is t and hit[1] == t._version[0]:
            return hit[2]
        cast = F.to_dtype(t, target)
        self._cache[key] = (weakref.ref(t), t._version[0], cast)
        return cast

    def clear_cache(self) -> None:
        self._cache.clear()


def _eligible(t, device_type: str) -> bool:
    """PyTorch's rule: floating tensors other than float64, on the region's device type."""
    return t._dtype.is_floating_point and t._dtype is not float64 and t._device.type == device_type


#: The autocast mode. It is in the dispatch mode stack while some device type's autocast is enabled.
MODE = AutocastMode()

__all__ = ["AutocastMode", "MODE"]
