"""Autocast's settings, with PyTorch's functions for them (``torch.is_autocast_enabled`` and kin).

Per device type: whether autocast is enabled and its low-precision dtype; globally: whether weight casts
are cached, and how deeply autocast regions are nested (the cache is cleared when the outermost one
exits). The settings are process-wide, like Ember's dispatch modes (PyTorch keeps them per thread).
Every change goes through ``_apply``, which keeps the autocast mode in the dispatch mode stack exactly
while some device type has autocast enabled: with none enabled, autocast costs nothing per op call.
"""
from __future__ import annotations

from ..dispatch.execution import modes
from ..dispatch.schema.dtypes import as_dtype, bfloat16, dtype as DType, float16
from .casting import MODE

_enabled: dict[str, bool] = {}
_dtypes: dict[str, DType] = {}
_nesting = [0]


def default_dtype(device_type: str) -> DType:
    """PyTorch's defaults: bfloat16 on cpu, float16 on cuda and other accelerators."""
    return bfloat16 if device_type == "cpu" else float16


def _apply() -> None:
    MODE.dtypes = {kind: get_autocast_dtype(kind) for kind, on in _enabled.items() if on}
    entered = MODE in modes.active
    if MODE.dtypes and not entered:
        MODE.__enter__()
    elif not MODE.dtypes and entered:
        MODE.__exit__(None, None, None)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (no argument: cuda, as PyTorch's legacy form)."""
    return _enabled.get("cuda" if device_type is None else device_type, False)


def set_autocast_enabled(device_type, enabled: bool | None = None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or the legacy ``set_autocast_enabled(enabled)`` for cuda."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _enabled[device_type] = bool(enabled)
    _apply()


def get_autocast_dtype(device_type: str) -> DType:
    return _dtypes.get(device_type) or default_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype) -> None:
    _dtypes[device_type] = as_dtype(dtype)
    _apply()


def is_autocast_cache_enabled() -> bool:
    return MODE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    MODE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached low-precision casts of weights (done when the outermost region exits)."""
    MODE.clear_cache()


def autocast_increment_nesting() -> int:
    _nesting[0] += 1
    return _nesting[0]


def autocast_decrement_nesting() -> int:
    _nesting[0] -= 1
    return _nesting[0]


# PyTorch's older per-device spellings.

def is_autocast_cpu_enabled() -> bool:
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> DType:
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> DType:
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    set_autocast_dtype("cuda", dtype)


__all__ = ["is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting", "is_autocast_cpu_enabled",
           "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype"]
