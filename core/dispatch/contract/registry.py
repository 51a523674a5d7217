"""The backend that runs a device type, and users' device specs resolved to devices.

Plugins are discovered in ``plugins``; its public functions are also reachable from here.
"""
from __future__ import annotations

from .backend import Backend
from ..schema.device import device
from ..schema.errors import DeviceError
from .plugins import (ENTRY_POINT_GROUP, available, backend_for, backends, discover, known_device_types, loaded,
                      on_backend_registered, register_plugin, report_statuses, status, unavailable_reason,
                      why_unknown)

__all__ = ["ENTRY_POINT_GROUP", "available", "backend_for", "backends", "discover", "get_backend", "known_device_types",
           "loaded", "on_backend_registered", "register_plugin", "report_statuses", "resolve_device", "status",
           "unavailable_reason"]

_ready: dict[str, Backend] = {}


def get_backend(device_type: str) -> Backend:
    """The available backend for ``device_type``, or a DeviceError that says why not."""
    backend = _ready.get(device_type)
    if backend is not None:
        return backend
    backend = backend_for(device_type)
    if backend is None:
        raise DeviceError(f"unknown device type {device_type!r}; {why_unknown(device_type)}")
    reason = unavailable_reason(device_type)
    if reason is not None:
        raise DeviceError(f"{device_type}: unavailable: {reason}")
    _ready[device_type] = backend
    return backend


def resolve_device(spec) -> device:
    """The canonical device for a user's spec: checks the backend exists and the index is in range."""
    dev = spec if isinstance(spec, device) else device(spec)
    backend = get_backend(dev.type)
    index = dev.index
    if index is None:
        index = backend.default_index()
    elif backend.default_index() is None:
        if index != 0:
            raise DeviceError(f"{dev.type} has a single device; got index {index}")
        index = None
    else:
        count = backend.device_count()
        if index >= count:
            raise DeviceError(f"device {dev} does not exist: {dev.type} has {count} device(s)")
    return device(dev.type, index)
