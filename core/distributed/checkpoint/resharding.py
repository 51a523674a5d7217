"""What a load reads: for each target, the saved chunks overlapping the flat range it needs.

A plain tensor needs all of its elements; a ``ShardedTensor`` only its piece, whatever pieces the checkpoint
was saved in. Values are gathered into host buffers first and copied into the targets only once every file
has been read and checked, so a damaged checkpoint leaves the targets untouched.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

import numpy as np

from ...autograd import no_grad
from ...dispatch.contract import registry
from ...serialization import load as deserialize
from ...serialization.errors import CheckpointError
from ...serialization.tensors import DTYPES, NUMPY, make_tensor
from ...tensor import Size, Tensor
from ..sharded_tensor import ShardedTensor
from .flatten import Path, is_tensor_like, set_element
from .metadata import Chunk, Metadata, ObjectEntry, TensorEntry


@dataclass
class TensorRead:
    """Elements ``[start, stop)`` of the saved tensor ``entry`` into ``target``."""
    target: Tensor | ShardedTensor
    entry: TensorEntry
    start: int
    stop: int
    chunks: list[Chunk] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.buffer = np.empty(self.stop - self.start, NUMPY[DTYPES[self.entry.dtype]])

    def take(self, data: bytes, chunk: Chunk) -> None:
        saved = np.frombuffer(data, self.buffer.dtype, chunk.numel, chunk.location.byte_offset)
        lo, hi = max(self.start, chunk.offset), min(self.stop, chunk.offset + chunk.numel)
        self.buffer[lo - self.start:hi - self.start] = saved[lo - chunk.offset:hi - chunk.offset]

    def apply(self, state_dict) -> None:
        local = self.target.to_local() if isinstance(self.target, ShardedTensor) else self.target
        values = make_tensor(self.buffer.reshape(local.shape), local.dtype, registry.resolve_device("cpu"))
        with no_grad():
            local.copy_(values)


@dataclass
class ObjectRead:
    """A non-tensor value, put back at ``path`` of the state dict."""
    key: str
    entry: ObjectEntry
    path: Path
    where: str  # the checkpoint, for errors
    value: object = None

    def take(self, data: bytes, chunk=None) -> None:
        loc = self.entry.location
        try:
            self.value = deserialize(io.BytesIO(data[loc.byte_offset:loc.byte_offset + loc.nbytes]))
        except CheckpointError as exc:  # e.g. a global that weights_only loading refuses to import
            message = str(exc).removeprefix("ember.load: <BytesIO stream>: ")
            file = os.path.join(self.where, loc.file)
            raise type(exc)(f"load: the value of {self.key} in checkpoint file {file}: {message}") from None

    def apply(self, state_dict) -> None:
        set_element(state_dict, self.path, self.value)


def plan_reads(flat: dict, paths: dict[str, Path], metadata: Metadata, allow_partial_load: bool,
               where: str) -> list[TensorRead | ObjectRead]:
    reads: list[TensorRead | ObjectRead] = []
    for key, value in flat.items():
        entry = metadata.state_dict_metadata.get(key)
        if entry is None:
            if allow_partial_load:
                continue
            raise RuntimeError(f"Missing key in checkpoint state_dict: {key}. (checkpoint {where})")
        if isinstance(entry, ObjectEntry):
            if is_tensor_like(value):
                raise ValueError(f"load: {key!r} is a non-tensor value in checkpoint {where}, but the state_dict "
                                 f"to load into holds a {type(value).__name__} there")
            reads.append(ObjectRead(key, entry, paths[key], where))
            continue
        if not is_tensor_like(value):
            raise ValueError(f"load: {key!r} is a {entry.dtype} tensor of shape {entry.shape} in checkpoint "
                             f"{where}, but the state_dict to load into holds a {type(value).__name__} there; "
                             f"pass a tensor (or ShardedTensor) to load it into")
        reads.append(_tensor_read(key, value, entry, where))
    return reads


def _tensor_read(key: str, target, entry: TensorEntry, where: str) -> TensorRead:
    if tuple(target.shape) != entry.shape:
        raise ValueError(f"load: Size mismatch between saved {Size(entry.shape)} and current: "
                         f"{Size(target.shape)} for {key} (checkpoint {where})")
    if target.dtype.name != entry.dtype:
        raise TypeError(f"load: dtype mismatch for {key}: saved {entry.dtype}, current {target.dtype.name} "
                        f"(checkpoint {where})")
    if isinstance(target, ShardedTensor):
        start, stop = target.offset, target.offset + target.to_local().numel()
    else:
        start, stop = 0, target.numel()
    read = TensorRead(target, entry, start, stop)
    read.chunks = [c for c in entry.chunks if c.offset < stop and c.offset + c.numel > start]
    covered = start
    for chunk in sorted(read.chunks, key=lambda c: c.offset):
        if chunk.offset > covered:
            break
        covered = max(covered, chunk.offset + chunk.numel)
    if covered < stop:
        raise ValueError(f"load: checkpoint {where} holds no data for element {covered} of {key} "
                         f"(shape {entry.shape}); its metadata is incomplete")
    return read


def reads_by_file(reads: list[TensorRead | ObjectRead]) -> dict[str, list[tuple[TensorRead | ObjectRead, Chunk]]]:
    """Which reads each data file serves, so that every file is read once."""
    by_file: dict[str, list] = {}
    for read in reads:
        if isinstance(read, ObjectRead):
            by_file.setdefault(read.entry.location.file, []).append((read, None))
        else:
            for chunk in read.chunks:
                by_file.setdefault(chunk.location.file, []).append((read, chunk))
    return by_file
