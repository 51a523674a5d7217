"""``ember.utils.dlpack``: PyTorch's ``torch.utils.dlpack`` (capsules in and out, the device type enum)."""
from __future__ import annotations

from ..interop.dlpack import from_dlpack
from ..interop.dlpack_structs import DLDeviceType
from ..tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


def to_dlpack(tensor: Tensor):
    """A legacy ("dltensor") DLPack capsule sharing ``tensor``'s memory; consume it once with ``from_dlpack``.

    Like PyTorch's, it exports the data of a tensor that requires grad (``__dlpack__`` refuses those)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack: expected an ember.Tensor, got {type(tensor).__name__}")
    return tensor.detach().__dlpack__()
