"""``ember.cuda``: PyTorch's ``torch.cuda`` functions, answered by whichever backend provides device type "cuda".

Everything goes through the plugin registry and the generic ``Backend`` hooks, so this module imports
no CuPy and works (returning False, 0, or a clear DeviceError) where the cuda backend is missing or
cannot run. As in PyTorch, the seeding functions are silently ignored when CUDA is unavailable.
"""
from __future__ import annotations

from ..dispatch.schema.errors import OutOfMemoryError
from ._device import TYPE as _TYPE, available as _available, backend as _backend, index_of as _index, \
    provider as _provider

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "reset_peak_memory_stats", "empty_cache", "manual_seed",
           "manual_seed_all", "seed_all", "get_rng_state", "set_rng_state", "unavailable_reason", "is_bf16_supported",
           "amp", "OutOfMemoryError", "Stream", "Event", "StreamContext", "current_stream", "default_stream",
           "set_stream", "stream", "get_device_name", "get_device_properties", "get_device_capability",
           "mem_get_info", "memory_stats", "memory_summary", "nvtx", "CUDAGraph", "graph", "graph_pool_handle",
           "make_graphed_callables"]


def unavailable_reason() -> str | None:
    """None when CUDA can be used, else why not (the same text as ``ember.backends.available()``)."""
    backend = _provider()
    if backend is None:
        return f"no backend plugin provides device type {_TYPE!r}"
    return backend.unavailable_reason()


def is_available() -> bool:
    """Whether tensors can be placed on ``"cuda"`` here."""
    return _available()


def device_count() -> int:
    return _provider().device_count() if is_available() else 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current cuda device takes bfloat16 tensors (False where CUDA is unavailable). The backend
    stores bfloat16 and computes it in float32 (``Backend.storage_only_dtypes``): emulation, as PyTorch calls
    it, so ``including_emulation=False`` answers False where that is how bfloat16 runs."""
    if not is_available():
        return False
    from ..dispatch.schema.dtypes import bfloat16
    backend = _provider()
    index = backend.default_index()
    if bfloat16 not in backend.supported_dtypes(index):
        return False
    return including_emulation or bfloat16 not in backend.storage_only_dtypes(index)


def current_device() -> int:
    """The index a bare ``"cuda"`` stands for."""
    return _backend().default_index()


def set_device(device) -> None:
    """Make ``device`` (an index, "cuda:N" or an ember.device) the current cuda device."""
    _backend().set_default_index(_index(device))


def synchronize(device=None) -> None:
    """Wait until the queued work on ``device`` (default: the current device) has finished."""
    from ..dispatch.execution.host_reads import synchronize as _synchronize  # judges deferred value checks too
    _synchronize(_backend(), _index(device))


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
    from ..dispatch.schema.dtypes import uint8
    index = _index(device)
    return tensor(list(_backend().default_generator(index).get_state()), dtype=uint8)


def set_rng_state(state, device=None) -> None:
    index = _index(device)
    raw = bytes(state.tolist()) if hasattr(state, "tolist") else bytes(state)
    _backend().default_generator(index).set_state(raw)


# ember.cuda.FloatTensor, ember.cuda.LongTensor, ...: PyTorch's legacy cuda type names (see legacy_types).
from ..legacy_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

globals().update(_CUDA_TYPES)

from . import amp, nvtx  # noqa: E402  (ember.cuda.amp: torch.cuda.amp's spellings; ember.cuda.nvtx)
from .device_info import get_device_capability, get_device_name, get_device_properties, mem_get_info  # noqa: E402
from .memory_report import memory_stats, memory_summary  # noqa: E402
from .streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream  # noqa: E402
from .graphs import CUDAGraph, graph, graph_pool_handle, make_graphed_callables  # noqa: E402
