"""Gradient buckets: parameters grouped so that one all-reduce carries many gradients.

Parameters are taken in reverse registration order (gradients of the last layers are ready first in
backward), kept apart by dtype and device, and closed into a bucket once it holds ``limit`` bytes. The
first bucket is small (1 MiB, as in PyTorch) so that communication starts early in backward.
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...functions import zeros

FIRST_BUCKET_BYTES = 1024 * 1024
MIB = 1024 * 1024


def assign_buckets(params: list, bucket_bytes: int, first_bucket_bytes: int = FIRST_BUCKET_BYTES) -> list[list[int]]:
    """Indices into ``params`` per bucket, buckets in the order their gradients are expected to be ready."""
    open_buckets: dict = {}  # (dtype, device) -> [indices, bytes, limit]
    closed: list[list[int]] = []
    for index in reversed(range(len(params))):
        p = params[index]
        key = (p.dtype, p.device)
        bucket = open_buckets.setdefault(key, [[], 0, first_bucket_bytes])
        bucket[0].append(index)
        bucket[1] += p.numel() * p.element_size()
        if bucket[1] >= bucket[2]:
            closed.append(bucket[0])
            open_buckets[key] = [[], 0, bucket_bytes]
    closed.extend(bucket[0] for bucket in open_buckets.values() if bucket[0])
    closed.sort(key=lambda indices: -indices[0])  # by the position of the bucket's first gradient
    return closed


class Bucket:
    """One flat buffer holding the gradients of ``indices`` back to back, with a view per parameter."""

    def __init__(self, params: list, indices: list[int]) -> None:
        self.indices = indices
        first = params[indices[0]]
        sizes = [params[i].numel() for i in indices]
        self.buffer = zeros(sum(sizes), dtype=first.dtype, device=first.device)
        self.views = []
        offset = 0
        for i, size in zip(indices, sizes):
            self.views.append(self.buffer.narrow(0, offset, size).view(params[i].shape))
            offset += size
        self.position = {index: k for k, index in enumerate(indices)}  # parameter index -> its view
        self.pending = len(indices)

    def view_of(self, index: int):
        return self.views[self.position[index]]

    def fill(self, index: int, grad) -> None:
        """Copy a parameter's gradient (zeros when it has none) into its place in the buffer."""
        view = self.view_of(index)
        with no_grad():
            if grad is None:
                view.zero_()
            elif grad is not view:
                view.copy_(grad)
