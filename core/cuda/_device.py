"""How ``ember.cuda``'s functions reach the cuda backend: through the registry, never by importing it.

Where CUDA cannot be used, ``backend()`` raises the registry's DeviceError, which carries
``unavailable_reason()`` ("cuda: unavailable: CuPy is not installed; ...").
"""
from __future__ import annotations

from ..dispatch.contract import registry
from ..dispatch.contract.backend import Backend
from ..dispatch.contract.device_runtime import DeviceRuntime
from ..dispatch.schema.errors import DeviceError

TYPE = "cuda"


def provider() -> Backend | None:
    """The registered cuda backend, or None (no plugin provides the device type)."""
    return registry.backend_for(TYPE)


def available() -> bool:
    """Whether tensors can be placed on ``"cuda"`` here (a backend that can run, with at least one device)."""
    cuda = provider()
    return cuda is not None and cuda.unavailable_reason() is None and cuda.device_count() > 0


def backend() -> Backend:
    """The available cuda backend, or the DeviceError that says why it cannot be used."""
    return registry.get_backend(TYPE)


def runtime() -> DeviceRuntime:
    """The backend's streams, events and device facts (its ``device_runtime`` hook)."""
    return backend().device_runtime()


def index_of(device) -> int:
    """A device spec (None for the current device, an int, "cuda:1", an ember.device) as a cuda index."""
    cuda = backend()
    if device is None:
        return cuda.default_index()
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"{TYPE}:{device}"
    resolved = registry.resolve_device(device)
    if resolved.type != TYPE:
        raise DeviceError(f"expected a {TYPE} device, got {resolved}")
    return resolved.index
