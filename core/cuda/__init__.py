"""``ember.cuda``: PyTorch's ``torch.cuda`` functions, answered by whichever backend provides device type "cuda".

Everything goes through the plugin registry and the generic ``Backend`` hooks, so this module imports
no CuPy and works (returning False, 0, or a clear DeviceError) where the cuda backend is missing or
cannot run. As in PyTorch, the seeding functions are silently ignored when CUDA is unavailable.
"""
from __future__ import annotations

from ..dispatch import registry
from ..dispatch.errors import DeviceError, OutOfMemoryError

_TYPE = "cuda"

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "reset_peak_memory_stats", "empty_cache", "manual_seed",
           "manual_seed_all", "seed_all", "get_rng_state", "set_rng_state", "unavailable_reason", "is_bf16_supported",
           "amp", "OutOfMemoryError"]


def _provider():
    """The registered cuda backend, or None (no plugin provides the device type)."""
    return registry.backend_for(_TYPE)


def unavailable_reason() -> str | None:
    """None when CUDA can be used, else why not (the same text as ``ember.backends.available()``)."""
    backend = _provider()
    if backend is None:
        return f"no backend plugin provides device type {_TYPE!r}"
    return backend.unavailable_reason()


def is_available() -> bool:
    """Whether tensors can be placed on ``"cuda"`` here."""
    return unavailable_reason() is None and _provider().device_count() > 0


def device_count() -> int:
    return _provider().device_count() if is_available() else 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current cuda device takes bfloat16 tensors (False where CUDA is unavailable)."""
    if not is_available():
        return False
    from ..dispatch.dtypes import bfloat16
    backend = _provider()
    return bfloat16 in backend.supported_dtypes(backend.default_index())


def _backend():
    """The available cuda backend, or the DeviceError that says why it cannot be used."""
    return registry.get_backend(_TYPE)


def _index(device) -> int:
    """A device spec (None for the current device, an int, "cuda:1", an ember.device) as a cuda index."""
    backend = _backend()
    if device is None:
        return backend.default_index()
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"{_TYPE}:{device}"
    resolved = registry.resolve_device(device)
    if resolved.type != _TYPE:
        raise DeviceError(f"expected a {_TYPE} device, got {resolved}")
    return resolved.index


def current_device() -> int:
    """The index a bare ``"cuda"`` stands for."""
    return _backend().default_index()


def set_device(device) -> None:
    """Make ``device`` (an index, "cuda:N" or an ember.device) the current cuda device."""
    _backend().set_default_index(_index(device))


def synchronize(device=None) -> None:
    """Wait until the queued work on ``device`` (default: the current device) has finished."""
    _backend().synchronize(_index(device))


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by tensors on ``device`` now."""
    return _backend().memory_stats(_index(device)).get("allocated_bytes", 0)


def max_memory_allocated(device=None) -> int:
    """The most bytes ``memory_allocated`` has reported since start or ``reset_peak_memory_stats``."""
    return _backend().memory_stats(_index(device)).get("peak_bytes", 0)


def memory_reserved(device=None) -> int:
    """Bytes the backend's allocator holds from the device, in use or cached for reuse."""
    stats = _backend().memory_stats(_index(device))
    return stats.get("reserved_bytes", stats.get("allocated_bytes", 0))


def reset_peak_memory_stats(device=None) -> None:
    _backend().reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    """Release cached, unused device memory of the current device (no effect where CUDA is unavailable)."""
    if is_available():
        _backend().empty_cache(_backend().default_index())


def manual_seed(seed: int) -> None:
    """Seed the current device's default generator (ignored where CUDA is unavailable)."""
    if is_available():
        backend = _backend()
        backend.default_generator(backend.default_index()).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed the default generator of every cuda device (ignored where CUDA is unavailable)."""
    if is_available():
        _backend().manual_seed(int(seed))


def seed_all() -> int:
    """Seed every cuda device from OS entropy; returns the seed (also when CUDA is unavailable)."""
    import secrets
    value = secrets.randbits(63)
    manual_seed_all(value)
    return value


def get_rng_state(device=None):
    """The default generator's state on ``device`` as a uint8 tensor (on the CPU), for checkpoints."""
    from ..creation import tensor
    from ..dispatch.dtypes import uint8
    index = _index(device)
    return tensor(list(_backend().default_generator(index).get_state()), dtype=uint8)


def set_rng_state(state, device=None) -> None:
    index = _index(device)
    raw = bytes(state.tolist()) if hasattr(state, "tolist") else bytes(state)
    _backend().default_generator(index).set_state(raw)


# ember.cuda.FloatTensor, ember.cuda.LongTensor, ...: PyTorch's legacy cuda type names (see legacy_types).
from ..legacy_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

globals().update(_CUDA_TYPES)

from . import amp  # noqa: E402  (ember.cuda.amp: torch.cuda.amp's spellings)
