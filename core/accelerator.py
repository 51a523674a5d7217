"""``ember.accelerator``: PyTorch's device-generic accelerator API, answered from the backend registry.

The current accelerator is the first available backend that is not the CPU, in the registry's
order of device types (cuda before opencl, say); ``None`` when there is none. As in PyTorch, the
functions that need an accelerator raise a RuntimeError where none is available.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .dispatch.contract import registry
from .dispatch.execution import host_reads
from .dispatch.schema.device import device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "current_device_idx", "set_device_idx", "synchronize"]

_Device = device  # get_device_module's parameter takes the name
_NONE_AVAILABLE = "Cannot access accelerator device when none is available."
_PREFERRED = ("cuda", "mps", "xpu")  # real GPUs first, then any other plugin (opencl, ...) by name


def _accelerator_backend():
    """The backend of the current accelerator, or None."""
    found = registry.backends()
    order = [t for t in _PREFERRED if t in found] + sorted(t for t in found if t not in _PREFERRED)
    for device_type in order:
        backend = found[device_type]
        if device_type != "cpu" and backend.unavailable_reason() is None and backend.device_count() > 0:
            return backend
    return None


def _required_backend():
    backend = _accelerator_backend()
    if backend is None:
        raise RuntimeError(_NONE_AVAILABLE)
    return backend


def is_available() -> bool:
    """Whether any non-CPU backend can run here."""
    return _accelerator_backend() is not None


def current_accelerator(check_available: bool = False) -> device | None:
    """The accelerator's device type as a device (``device(type='opencl')``), or None."""
    backend = _accelerator_backend()
    return None if backend is None else device(backend.device_type)


def device_count() -> int:
    """How many devices the current accelerator has (0 where there is none)."""
    backend = _accelerator_backend()
    return 0 if backend is None else backend.device_count()


def current_device_index() -> int:
    """The index a bare accelerator device type stands for."""
    index = _required_backend().default_index()
    return 0 if index is None else index


def set_device_index(device_index) -> None:
    """Make ``device_index`` (an int, "opencl:1" or a device) the current accelerator device."""
    backend = _required_backend()
    if not isinstance(device_index, int) or isinstance(device_index, bool):
        resolved = registry.resolve_device(device_index)
        if resolved.type != backend.device_type:
            raise ValueError(f"set_device_index: {resolved} is not a device of the current accelerator "
                             f"({backend.device_type})")
        device_index = resolved.index or 0
    if not 0 <= device_index < backend.device_count():
        raise ValueError(f"set_device_index: {backend.device_type} has {backend.device_count()} device(s), "
                         f"got index {device_index}")
    if device_index != current_device_index():  # single-device types (default index None) have only 0
        backend.set_default_index(device_index)


current_device_idx = current_device_index
set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for the work queued on ``device`` (default: the current accelerator device)."""
    backend = _required_backend()
    index = backend.default_index()
    if device is not None:
        if isinstance(device, int) and not isinstance(device, bool):
            index = device
        else:
            resolved = registry.resolve_device(device)
            if resolved.type != backend.device_type:
                raise ValueError(f"synchronize: {resolved} is not a device of the current accelerator "
                                 f"({backend.device_type})")
            index = resolved.index
    host_reads.synchronize(backend, index)  # also judges the device's deferred value checks


def get_device_module(device=None) -> ModuleType:
    """The module of a device type (``ember.cuda`` for ``"cuda:0"``, ``ember.cpu`` for ``"cpu"``); with no
    device, that of the current accelerator, else ``ember.cpu``."""
    if device is None:
        current = current_accelerator()
        name = current.type if current is not None else "cpu"
    elif isinstance(device, _Device):
        name = device.type
    elif isinstance(device, str):
        name = _Device(device).type
    else:
        raise RuntimeError(f"get_device_module: invalid value of device '{device}', expected a ember.device, "
                           f"a str or None")
    try:
        return importlib.import_module(f"ember.{name}")
    except ModuleNotFoundError:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'ember.{name}'.") from None
