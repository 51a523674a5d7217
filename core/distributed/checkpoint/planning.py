"""Who writes what in a save: each rank describes its items, and every rank derives the same global plan.

A plain tensor is a chunk covering all of its elements; a ``ShardedTensor`` is the chunk of its piece. A
chunk held by several ranks (a replicated tensor, HYBRID_SHARD replicas of a piece: same key, offset and
numel) is written once, by the lowest rank holding it, and so is a non-tensor value. The ranks must agree on
each key's type, shape and dtype, and their chunks must cover every element.
"""
from __future__ import annotations

import io
import secrets
from dataclasses import dataclass, field

import numpy as np

from ...serialization import save as serialize
from ...serialization.tensors import host_values
from ...tensor import Tensor
from ..sharded_tensor import ShardedTensor
from .flatten import is_tensor_like
from .metadata import Chunk, FileRecord, Location, Metadata, ObjectEntry, TensorEntry
from .storage import Payload


@dataclass(frozen=True)
class WriteItem:
    """One chunk of a tensor (``shape``/``dtype`` are the global tensor's) or one non-tensor value."""
    key: str
    is_tensor: bool
    shape: tuple[int, ...] = ()
    dtype: str = ""
    offset: int = 0
    numel: int = 0

    def describe(self) -> str:
        return f"a {self.dtype} tensor of shape {self.shape}" if self.is_tensor else "a non-tensor value"


@dataclass
class SavePlan:
    entries: dict[str, WriteItem] = field(default_factory=dict)  # each key as its lowest rank holds it
    writes: list[list[WriteItem]] = field(default_factory=list)  # per rank, what it writes


def new_save_id() -> str:
    return secrets.token_hex(16)


def local_items(flat: dict) -> list[WriteItem]:
    items = []
    for key, value in flat.items():
        if isinstance(value, ShardedTensor):
            items.append(WriteItem(key, True, tuple(value.shape), value.dtype.name, value.offset,
                                   value.to_local().numel()))
        elif isinstance(value, Tensor):
            items.append(WriteItem(key, True, tuple(value.shape), value.dtype.name, 0, value.numel()))
        else:
            items.append(WriteItem(key, False))
    return items


def plan_save(plans: list[list[WriteItem]]) -> SavePlan:
    """The same plan on every rank, from every rank's items (in rank order)."""
    plan = SavePlan(writes=[[] for _ in plans])
    holder: dict[str, int] = {}
    written: set[tuple[str, int, int]] = set()
    for rank, items in enumerate(plans):
        for item in items:
            first = plan.entries.setdefault(item.key, item)
            holder.setdefault(item.key, rank)
            if (first.is_tensor, first.shape, first.dtype) != (item.is_tensor, item.shape, item.dtype):
                raise ValueError(f"save: the ranks disagree about {item.key!r}: rank {holder[item.key]} holds "
                                 f"{first.describe()}, rank {rank} holds {item.describe()}")
            chunk = (item.key, item.offset, item.numel)
            if chunk not in written and (item.numel > 0 or not item.is_tensor):
                written.add(chunk)
                plan.writes[rank].append(item)
    _check_coverage(plan)
    return plan


def _check_coverage(plan: SavePlan) -> None:
    ranges: dict[str, list[tuple[int, int]]] = {}
    for items in plan.writes:
        for item in items:
            ranges.setdefault(item.key, []).append((item.offset, item.offset + item.numel))
    for key, entry in plan.entries.items():
        if not entry.is_tensor:
            continue
        total = int(np.prod(entry.shape, dtype=np.int64))
        covered = 0
        for start, stop in sorted(ranges.get(key, [])):
            if start > covered:
                break
            covered = max(covered, stop)
        if covered < total:
            raise ValueError(f"save: the ranks' pieces of {key!r} ({entry.describe()}) leave element {covered} "
                             f"of {total} uncovered; every element must be held by some rank")


def payload(value) -> Payload:
    """The bytes of a tensor's piece, or of a non-tensor value serialized by ``ember.save``, made on demand."""
    if is_tensor_like(value):
        local = value.to_local() if isinstance(value, ShardedTensor) else value
        return lambda: host_values(local).reshape(-1).view(np.uint8)

    def serialized() -> np.ndarray:
        buffer = io.BytesIO()
        serialize(value, buffer)
        return np.frombuffer(buffer.getvalue(), np.uint8)
    return serialized


def build_metadata(save_id: str, plan: SavePlan,
                   written: list[tuple[dict[str, FileRecord], list[Location]]]) -> Metadata:
    """The checkpoint's metadata from the plan and where each rank's writes landed."""
    entries: dict[str, TensorEntry | ObjectEntry] = {
        key: TensorEntry(item.shape, item.dtype) for key, item in plan.entries.items() if item.is_tensor}
    files: dict[str, FileRecord] = {}
    for items, (rank_files, locations) in zip(plan.writes, written):
        files.update(rank_files)
        for item, location in zip(items, locations):
            if item.is_tensor:
                entries[item.key].chunks.append(Chunk(item.offset, item.numel, location))
            else:
                entries[item.key] = ObjectEntry(location)
    ordered = {key: entries[key] for key in plan.entries}
    return Metadata(save_id, files, ordered)
