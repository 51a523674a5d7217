"""Making every rank's parameters and buffers equal to one rank's: a broadcast per dtype and device.

Tensors of one dtype and device travel flattened into one message, then are copied back in place, so
optimizers and other references to the tensors see the new values.
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...functions import cat


def _by_kind(tensors: list) -> dict:
    groups: dict = {}
    for t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    return groups


def broadcast_coalesced(dist, tensors: list, src: int, group=None) -> None:
    """Overwrite ``tensors`` on every rank of ``group`` with rank ``src``'s values."""
    with no_grad():
        for same_kind in _by_kind([t for t in tensors if t.numel() > 0]).values():
            flat = cat([t.detach().reshape(-1) for t in same_kind])
            dist.broadcast(flat, src, group=group)
            offset = 0
            for t in same_kind:
                size = t.numel()
                t.copy_(flat.narrow(0, offset, size).view(t.shape))
                offset += size
