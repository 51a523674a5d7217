"""``ProfilerActivity``: what a profile measures. CPU is host time; every other activity is device time,
measured by the backend itself (``Backend.device_timer``) for the device types it stands for."""
from __future__ import annotations

import enum

from ..dispatch.contract import registry
from ..dispatch.contract.backend import Backend


class ProfilerActivity(enum.Enum):
    """PyTorch's activities. ``CUDA`` (and ``XPU``, ``MTIA``, ``HPU``) time their device types;
    ``PrivateUse1`` times every other non-CPU backend (``opencl``, plugins), as in PyTorch."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


_NAMED = {"cuda": ProfilerActivity.CUDA, "xpu": ProfilerActivity.XPU, "mtia": ProfilerActivity.MTIA,
          "hpu": ProfilerActivity.HPU}


def activity_of(device_type: str) -> ProfilerActivity:
    """The activity that measures work on ``device_type``."""
    if device_type == "cpu":
        return ProfilerActivity.CPU
    return _NAMED.get(device_type, ProfilerActivity.PrivateUse1)


def _offers_timer(backend: Backend) -> bool:
    """Whether the backend implements the optional ``device_timer`` hook (asked without starting a device)."""
    return type(backend).device_timer is not Backend.device_timer


def supported_activities() -> set[ProfilerActivity]:
    """CPU, plus the activity of each available backend that can time its own work."""
    found = {ProfilerActivity.CPU}
    for name, backend in registry.backends().items():
        if name != "cpu" and backend.unavailable_reason() is None and _offers_timer(backend):
            found.add(activity_of(name))
    return found
