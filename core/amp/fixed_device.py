"""``torch.cuda.amp`` and ``torch.cpu.amp``: PyTorch's older spellings, with the device type fixed.

``ember.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)`` is
``ember.autocast("cuda", ...)``; likewise ``GradScaler``, ``custom_fwd`` and ``custom_bwd``. One
factory serves every device type, so the spellings cannot drift from ``ember.amp``.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from . import state
from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler


class DeviceAmp(NamedTuple):
    autocast: type
    GradScaler: type
    custom_fwd: functools.partial
    custom_bwd: functools.partial


def amp_for(device_type: str) -> DeviceAmp:
    """The names of ``torch.<device_type>.amp``, bound to ``device_type``."""

    class DeviceAutocast(autocast):
        def __init__(self, enabled: bool = True, dtype=state.default_dtype(device_type),
                     cache_enabled: bool = True) -> None:
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class DeviceGradScaler(GradScaler):
        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    for cls in (DeviceAutocast, DeviceGradScaler):
        cls.__name__ = cls.__qualname__ = cls.__mro__[1].__name__
        cls.__module__ = f"ember.{device_type}.amp"
    return DeviceAmp(DeviceAutocast, DeviceGradScaler, functools.partial(custom_fwd, device_type=device_type),
                     functools.partial(custom_bwd, device_type=device_type))


__all__ = ["amp_for", "DeviceAmp"]
