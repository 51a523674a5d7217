"""``ShardedTensor``: one rank's contiguous piece of a tensor whose elements are spread over ranks.

The piece is the elements ``[offset, offset + local.numel())`` of the global tensor flattened in row-major
order: what a rank's slice of an FSDP flat-parameter shard intersects of each original parameter. Pieces may
be empty, differ in size between ranks, and overlap (HYBRID_SHARD replicas hold the same piece).
``ember.distributed.checkpoint`` saves and loads these pieces without ever assembling the global tensor.
"""
from __future__ import annotations

import operator

from ..creation import tensor as make_tensor
from ..dispatch.schema.dtypes import int64
from ..dispatch.schema.errors import ShapeError
from ..functions import empty
from ..tensor import Size, Tensor
from .collectives import all_gather
from .state import is_initialized, resolve


class ShardedTensor:
    """A rank's flat piece of a global tensor of shape ``global_shape``, starting at element ``offset``."""

    def __init__(self, local: Tensor, global_shape, offset: int, group=None) -> None:
        if not isinstance(local, Tensor):
            raise TypeError(f"ShardedTensor: local must be an ember.Tensor, got {type(local).__name__}")
        self._local = local
        self._shape = _checked_shape(global_shape)
        self._offset = _checked_offset(offset)
        self.group = group
        if local.ndim != 1:
            raise ShapeError(f"ShardedTensor: local must be 1-d (a flat piece), got shape {tuple(local.shape)} "
                             f"({local.dtype.name} on {local.device})")
        end = self._offset + local.numel()
        if end > self._shape.numel():
            raise ShapeError(f"ShardedTensor: the piece [{self._offset}, {end}) ({local.numel()} {local.dtype.name} "
                             f"elements on {local.device}) does not fit in global shape {tuple(self._shape)} of "
                             f"{self._shape.numel()} elements")

    # -- metadata of the global tensor ----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return self._shape

    def size(self, dim: int | None = None):
        if dim is None:
            return self._shape
        ndim = len(self._shape)
        if not -ndim <= dim < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                             f"but got {dim})")
        return self._shape[dim]

    @property
    def dtype(self):
        return self._local.dtype

    @property
    def device(self):
        return self._local.device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        """Elements of the global tensor (``to_local().numel()`` is this rank's share)."""
        return self._shape.numel()

    @property
    def offset(self) -> int:
        return self._offset

    def to_local(self) -> Tensor:
        """The 1-d local piece itself (not a copy): writing to it writes this rank's share."""
        return self._local

    # -- assembling ------------------------------------------------------------------------------------
    def full_tensor(self) -> Tensor:
        """The global tensor, on every rank of ``group`` (a collective: every rank must call it)."""
        if not is_initialized():
            if self._offset != 0 or self._local.numel() != self.numel():
                raise ValueError(f"ShardedTensor.full_tensor: without an initialized process group the piece must "
                                 f"cover the whole tensor, but it holds elements [{self._offset}, "
                                 f"{self._offset + self._local.numel()}) of {self.numel()} (global shape "
                                 f"{tuple(self._shape)})")
            return self._local.detach().clone().reshape(self._shape)
        pg = resolve(self.group, "ShardedTensor.full_tensor")
        ranges = _gather_ranges(pg, self._offset, self._local.numel())
        _check_coverage(ranges, self.numel(), self._shape)  # the same ranges everywhere: every rank raises
        width = max(n for _, n in ranges)
        padded = empty(width, dtype=self.dtype, device=self.device)
        padded[:self._local.numel()] = self._local.detach()
        pieces = [empty(width, dtype=self.dtype, device=self.device) for _ in ranges]
        all_gather(pieces, padded, group=pg)
        flat = empty(self.numel(), dtype=self.dtype, device=self.device)
        for (start, n), piece in zip(ranges, pieces):
            flat[start:start + n] = piece[:n]
        return flat.reshape(self._shape)

    def __repr__(self) -> str:
        return (f"ShardedTensor(shape={list(self._shape)}, offset={self._offset}, "
                f"local_numel={self._local.numel()}, dtype={self.dtype}, device={self.device})")


def _checked_shape(global_shape) -> Size:
    try:
        dims = [operator.index(n) for n in global_shape]
    except TypeError:
        raise TypeError(f"ShardedTensor: global_shape must be a sequence of ints, got {global_shape!r}") from None
    if any(n < 0 for n in dims):
        raise ValueError(f"ShardedTensor: global_shape {tuple(dims)} has a negative dimension")
    return Size(dims)


def _checked_offset(offset) -> int:
    try:
        offset = operator.index(offset)
    except TypeError:
        raise TypeError(f"ShardedTensor: offset must be an int, got {type(offset).__name__}") from None
    if offset < 0:
        raise ValueError(f"ShardedTensor: offset must be non-negative, got {offset}")
    return offset


def _gather_ranges(pg, offset: int, numel: int) -> list[tuple[int, int]]:
    """Every rank's (offset, numel), in group-rank order."""
    mine = make_tensor([offset, numel], dtype=int64)
    ranges = [empty(2, dtype=int64) for _ in range(pg.size())]
    all_gather(ranges, mine, group=pg)
    return [(int(r[0].item()), int(r[1].item())) for r in ranges]


def _check_coverage(ranges: list[tuple[int, int]], total: int, shape: Size) -> None:
    """Every element must lie in some rank's piece, or the assembled tensor would hold garbage."""
    covered = 0
    for start, n in sorted(r for r in ranges if r[1] > 0):
        if start > covered:
            break
        covered = max(covered, start + n)
    if covered < total:
        raise ValueError(f"ShardedTensor.full_tensor: the ranks' pieces {ranges} (offset, numel) leave element "
                         f"{covered} of the global shape {tuple(shape)} ({total} elements) uncovered")
