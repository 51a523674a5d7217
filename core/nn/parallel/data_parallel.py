"""``DataParallel``: PyTorch's single-process data parallelism, for one device.

PyTorch's DataParallel splits each batch over several GPUs of one process. Ember runs a process per device
instead (``DistributedDataParallel``), so DataParallel here wraps a module on one device: the forward is the
module's, and the attributes are PyTorch's, so code written for either runs unchanged.
"""
from __future__ import annotations

from ...dispatch.schema.device import device as Device
from ..modules.module import Module

__all__ = ["DataParallel"]


def _index(device) -> int:
    """A device id as PyTorch's DataParallel keeps it: the index of an int, a "type:index" string or a device."""
    if isinstance(device, int):
        return device
    parsed = device if isinstance(device, Device) else Device(device)
    return parsed.index or 0


class DataParallel(Module):
    """Wraps ``module`` for data parallelism on one device (Ember's multi-device training is
    ``DistributedDataParallel``, one process per device)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        self.device_ids = [_index(d) for d in device_ids] if device_ids else []
        if len(self.device_ids) > 1:
            raise ValueError(f"DataParallel: Ember splits batches over several devices with one process per device; "
                             f"use ember.nn.parallel.DistributedDataParallel for device_ids={self.device_ids}")
        self.output_device = _index(output_device) if output_device is not None else (
            self.device_ids[0] if self.device_ids else None)

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
