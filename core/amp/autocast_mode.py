"""``ember.autocast``: PyTorch's ``torch.autocast`` region, and ``custom_fwd``/``custom_bwd`` for Functions.

Inside an enabled region, ops on the region's device type run in the dtypes their schema declaration
gives (``casting``): matmul, linear and convolutions in the low dtype, losses in float32, and so on.
Regions nest; an inner ``enabled=False`` region turns autocast off for its block. An instance is also a
decorator: each call of the decorated function runs in a fresh region of its own.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from ..dispatch.execution import links
from ..dispatch.contract import registry
from ..dispatch.schema.dtypes import as_dtype, dtype as DType, float32
from ..dispatch.schema.errors import DeviceError, DtypeError
from . import state


def is_autocast_available(device_type: str) -> bool:
    """Whether ``device_type`` names a backend that is installed and can run here."""
    return registry.status(device_type) == "available"


class autocast:
    """``with ember.autocast("cpu"):`` runs the block's ops in mixed precision (see the module docstring).

    ``dtype`` defaults to the device type's autocast dtype (bfloat16 on cpu, float16 elsewhere).
    ``cache_enabled`` caches the low-precision casts of weights within the region (default: the global
    setting, on). A device type that is registered but cannot run here disables the region with a
    warning, as PyTorch does for ``"cuda"`` without a GPU; a dtype the device cannot autocast to is an
    error (float32 only disables the region, with PyTorch's warning).
    """

    def __init__(self, device_type: str, dtype: DType | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = state.get_autocast_dtype(device_type) if dtype is None else as_dtype(dtype)
        self._enabled = bool(enabled)
        self._cache_enabled = state.is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._arguments = (device_type, dtype, enabled, cache_enabled)
        if self._enabled:
            self._enabled = _can_autocast(device_type, self.fast_dtype)

    def __enter__(self) -> "autocast":
        self._previous = (state.is_autocast_enabled(self.device), state.get_autocast_dtype(self.device),
                          state.is_autocast_cache_enabled())
        state.autocast_increment_nesting()
        state.set_autocast_cache_enabled(self._cache_enabled)
        state.set_autocast_dtype(self.device, self.fast_dtype)
        state.set_autocast_enabled(self.device, self._enabled)
        return self

    def __exit__(self, *exc) -> None:
        if state.autocast_decrement_nesting() == 0:
            state.clear_autocast_cache()
        enabled, dtype, cache_enabled = self._previous
        state.set_autocast_enabled(self.device, enabled)
        state.set_autocast_dtype(self.device, dtype)
        state.set_autocast_cache_enabled(cache_enabled)

    def __call__(self, function: Callable) -> Callable:
        arguments = self._arguments

        @functools.wraps(function)
        def in_region(*args, **kwargs):
            with autocast(*arguments):
                return function(*args, **kwargs)
        return in_region

    def __repr__(self) -> str:
        return f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled})"


def _can_autocast(device_type: str, dtype: DType) -> bool:
    """Whether a region on ``device_type`` in ``dtype`` can be enabled: False (with a warning) where the device
    type cannot run here or for float32; an error for a device type nobody provides or an unsupported dtype."""
    status = registry.status(device_type)
    if status is None:
        raise DeviceError(f"autocast: unsupported device_type {device_type!r}; registered backends: "
                          f"{', '.join(sorted(registry.available())) or 'none'}")
    if status != "available":
        warnings.warn(f"User provided device_type of {device_type!r}, but it is not available here "
                      f"({status}). Disabling autocast.", stacklevel=3)
        return False
    if dtype is float32:
        warnings.warn(f"In {device_type} autocast, but the target dtype float32 is not a low-precision dtype. "
                      f"Disabling autocast.", stacklevel=3)
        return False
    backend = registry.get_backend(device_type)
    index = backend.default_index()
    supported = backend.autocast_dtypes(index)
    if dtype not in supported:
        offered = ", ".join(d.name for d in sorted(supported, key=lambda d: d._rank)) or "none"
        advice = "bfloat16" if any(d.name == "bfloat16" for d in supported) else "float32 (enabled=False)"
        raise DtypeError(f"autocast: {device_type} device {backend.describe(index)} cannot autocast to "
                         f"{dtype.name} (its autocast dtypes: {offered}); use {advice} instead")
    return True


# -- custom autograd Functions --------------------------------------------------------------------------

def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: DType | None = None) -> Callable:
    """For ``Function.forward``: remembers the autocast state for ``custom_bwd``; with ``cast_inputs``, the
    forward runs with autocast off on inputs cast to that dtype (when autocast was on), as PyTorch's does."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        ctx._fwd_used_autocast = state.is_autocast_enabled(device_type)
        ctx._dtype = state.get_autocast_dtype(device_type)
        if cast_inputs is None or not ctx._fwd_used_autocast:
            return fwd(*args, **kwargs)
        target = as_dtype(cast_inputs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast_floating(args, target, device_type), **_cast_floating(kwargs, target, device_type))
    return decorated


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """For ``Function.backward``: runs it in the autocast state its forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(*args, **kwargs)
    return decorated


def _cast_floating(value: Any, target: DType, device_type: str) -> Any:
    """``value`` with every floating tensor on ``device_type`` in it (through containers) cast to ``target``."""
    if isinstance(value, links.tensor.type):
        if value.is_floating_point() and value.device.type == device_type:
            return value.to(target)
        return value
    if isinstance(value, dict):
        return {k: _cast_floating(v, target, device_type) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, target, device_type) for v in value)
    return value


__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]
