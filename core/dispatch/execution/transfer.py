"""Copying native arrays between devices: directly within one backend, else through host memory."""
from __future__ import annotations

from ..contract import registry
from . import host_reads
from ..schema.device import device as Device
from ..schema.dtypes import dtype as DType


def transfer(native, dt: DType, src: Device, dst: Device):
    """``native`` (on ``src``) as a native array on ``dst``."""
    if src.type == dst.type:
        return registry.get_backend(src.type).to_index(native, dst.index)
    host = host_reads.read(native, src)
    return registry.get_backend(dst.type).from_numpy(host, dt, dst.index)


__all__ = ["transfer"]
