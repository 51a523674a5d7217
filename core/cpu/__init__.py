"""``ember.cpu``: PyTorch's ``torch.cpu``, the CPU's answers to the functions ``torch.cuda`` has, and ``amp``."""
from __future__ import annotations

from . import amp

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "amp"]


def is_available() -> bool:
    """Always True: the CPU is always there."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """Accepted and ignored, as PyTorch does: there is one CPU device."""


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU ops finish before they return."""
