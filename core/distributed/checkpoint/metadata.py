"""What a checkpoint's ``.metadata`` file records, and its JSON form (read back with every field checked).

Per key: a tensor's global shape, dtype and chunks (flat element range and where its bytes lie), or where a
non-tensor value's serialized bytes lie. Per data file: its size, CRC-32 and the save id it must carry.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ...serialization.errors import CheckpointError
from ...serialization.tensors import DTYPES

FORMAT = "ember.distributed.checkpoint"
VERSION = 1


@dataclass(frozen=True)
class Location:
    """``nbytes`` bytes at ``byte_offset`` of data file ``file`` (a name inside the checkpoint directory)."""
    file: str
    byte_offset: int
    nbytes: int


@dataclass(frozen=True)
class Chunk:
    """Elements ``[offset, offset + numel)`` of the flattened global tensor, stored at ``location``."""
    offset: int
    numel: int
    location: Location


@dataclass
class TensorEntry:
    shape: tuple[int, ...]
    dtype: str
    chunks: list[Chunk] = field(default_factory=list)

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass
class ObjectEntry:
    """A non-tensor value, serialized with ``ember.save`` (read back with ``weights_only=True``)."""
    location: Location


@dataclass(frozen=True)
class FileRecord:
    size: int
    crc32: int


@dataclass
class Metadata:
    save_id: str
    files: dict[str, FileRecord]
    state_dict_metadata: dict[str, TensorEntry | ObjectEntry]

    def to_json(self) -> str:
        entries = {}
        for key, entry in self.state_dict_metadata.items():
            if isinstance(entry, TensorEntry):
                entries[key] = {"type": "tensor", "shape": list(entry.shape), "dtype": entry.dtype,
                                "chunks": [[c.offset, c.numel, *_location(c.location)] for c in entry.chunks]}
            else:
                entries[key] = {"type": "object", "location": _location(entry.location)}
        files = {name: {"size": r.size, "crc32": r.crc32} for name, r in self.files.items()}
        return json.dumps({"format": FORMAT, "version": VERSION, "save_id": self.save_id, "files": files,
                           "state_dict": entries}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes, where: str) -> Metadata:
        """Parse and check; anything malformed is a ``CheckpointError`` naming ``where`` (the file)."""
        try:
            doc = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CheckpointError(f"checkpoint metadata {where} is not valid JSON ({exc})") from None
        try:
            return _parse(doc)
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint metadata {where} is malformed: {exc}") from None


def _location(loc: Location) -> list:
    return [loc.file, loc.byte_offset, loc.nbytes]


def _parse(doc) -> Metadata:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"not an {FORMAT} metadata file")
    if doc.get("version") != VERSION:
        raise ValueError(f"format version {doc.get('version')!r}, this Ember reads version {VERSION}")
    files = {_str(name): FileRecord(_count(r["size"]), _count(r["crc32"])) for name, r in doc["files"].items()}
    entries: dict[str, TensorEntry | ObjectEntry] = {}
    for key, raw in doc["state_dict"].items():
        if raw["type"] == "object":
            entries[key] = ObjectEntry(_parse_location(raw["location"], files))
            continue
        if raw["type"] != "tensor":
            raise ValueError(f"key {key!r} has unknown type {raw['type']!r}")
        if raw["dtype"] not in DTYPES:
            raise ValueError(f"key {key!r} has unknown dtype {raw['dtype']!r}")
        entry = TensorEntry(tuple(_count(n) for n in raw["shape"]), raw["dtype"])
        itemsize = DTYPES[entry.dtype].itemsize
        for offset, numel, *loc in raw["chunks"]:
            chunk = Chunk(_count(offset), _count(numel), _parse_location(loc, files))
            if chunk.offset + chunk.numel > entry.numel() or chunk.numel * itemsize != chunk.location.nbytes:
                raise ValueError(f"key {key!r} has a chunk {chunk} that does not fit its shape {entry.shape}")
            entry.chunks.append(chunk)
        entries[key] = entry
    return Metadata(_str(doc["save_id"]), files, entries)


def _parse_location(raw, files: dict[str, FileRecord]) -> Location:
    name, byte_offset, nbytes = raw
    loc = Location(_str(name), _count(byte_offset), _count(nbytes))
    if loc.file not in files or loc.byte_offset + loc.nbytes > files[loc.file].size:
        raise ValueError(f"{loc} lies outside the recorded data files")
    return loc


def _count(value) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"expected a non-negative int, got {value!r}")
    return value


def _str(value) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value
