"""Where creation ops put tensors when no ``device=`` is given (``ember.set_default_device``)."""
from __future__ import annotations

from ..contract import registry
from .device import device as Device

_device: Device | None = None


def set_default_device(device) -> None:
    """``device`` for creation ops without ``device=`` (None: back to cpu)."""
    global _device
    _device = None if device is None else registry.resolve_device(device)


def get_default_device() -> Device:
    return _device or _cpu or _resolve_cpu()


_cpu: Device | None = None  # the cpu device as resolve_device names it, once resolved


def _resolve_cpu() -> Device:
    """Resolved once: every creation call without ``device=`` asks for the default device."""
    global _cpu
    _cpu = registry.resolve_device("cpu")
    return _cpu


__all__ = ["set_default_device", "get_default_device"]
