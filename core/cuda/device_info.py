"""What a program asks about its GPU: name, compute capability, properties, free memory (``torch.cuda``'s names)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from . import _device


@dataclass(frozen=True)
class CudaDeviceProperties:
    """PyTorch's ``_CudaDeviceProperties``: the device's facts, under PyTorch's attribute names. Fields the
    backend cannot tell are None."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    warp_size: int | None = None
    max_threads_per_multi_processor: int | None = None
    regs_per_multiprocessor: int | None = None
    L2_cache_size: int | None = None  # noqa: N815  (PyTorch's spelling)
    shared_memory_per_block: int | None = None
    is_integrated: bool | None = None
    is_multi_gpu_board: bool | None = None
    pci_bus_id: int | None = None
    pci_device_id: int | None = None
    pci_domain_id: int | None = None

    @classmethod
    def from_facts(cls, facts: dict[str, Any]) -> "CudaDeviceProperties":
        """From a backend's ``properties(index)`` dict; keys this class does not know are left out."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in facts.items() if key in known})

    def __repr__(self) -> str:
        mb = 1024 * 1024
        shown = [f"name={self.name!r}", f"major={self.major}", f"minor={self.minor}",
                 f"total_memory={self.total_memory // mb}MB", f"multi_processor_count={self.multi_processor_count}"]
        if self.L2_cache_size is not None:
            shown.append(f"L2_cache_size={self.L2_cache_size // mb}MB")
        return f"_CudaDeviceProperties({', '.join(shown)})"


def get_device_properties(device=None) -> CudaDeviceProperties:
    """The properties of ``device`` (an index, "cuda:N", an ember.device; default: the current device)."""
    index = _device.index_of(device)
    return CudaDeviceProperties.from_facts(_device.runtime().properties(index))


def get_device_name(device=None) -> str:
    """The device's marketing name ("NVIDIA H200")."""
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    """The device's compute capability as (major, minor): (9, 0) on Hopper."""
    properties = get_device_properties(device)
    return properties.major, properties.minor


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of device memory as the driver sees them, other processes' use included."""
    return _device.runtime().mem_get_info(_device.index_of(device))
