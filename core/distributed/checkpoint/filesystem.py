"""``FileSystemWriter`` and ``FileSystemReader``: a checkpoint as a directory of data files and ``.metadata``.

A data file is raw bytes: a 40-byte header (``EMBERDCP`` and the save id), then each payload in turn; nothing
in it is ever executed. Its name carries the save id (``__<rank>_<save id>.distcp``), so a new save never
touches the files the committed metadata references. Every data file is written to a locked temporary file,
fsynced and renamed (``ember.serialization.atomic``); the coordinator then replaces ``.metadata`` the same way.
That replace is the commit: a save killed before it leaves the previous checkpoint as it was. After it, the
files no committed metadata references (older saves', killed saves') are removed.
"""
from __future__ import annotations

import contextlib
import os
import re
import zlib

from ...serialization.atomic import atomic_path, remove_abandoned_temps
from ...serialization.errors import CheckpointError
from .metadata import FileRecord, Location, Metadata
from .storage import Payload, StorageReader, StorageWriter

METADATA_NAME = ".metadata"
MAGIC = b"EMBERDCP"
HEADER_SIZE = len(MAGIC) + 32  # the magic, then the save id as 32 hex digits
DATA_NAME = re.compile(r"__\d+(?:_\d+)?_[0-9a-f]{32}\.distcp")
DATA_TEMP = re.compile(r"\.(__\d+(?:_\d+)?_[0-9a-f]{32}\.distcp)\.[0-9a-f]{12}\.tmp")


class _Directory:
    """A checkpoint kept as files in one directory, ``path`` (``checkpoint_id`` names another)."""

    path: str

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        return isinstance(checkpoint_id, (str, os.PathLike))


class FileSystemWriter(_Directory, StorageWriter):
    """Saves into directory ``path`` (created if needed).

    ``single_file_per_rank=False`` writes one file per item instead of one per rank. Data files are always
    fsynced before the commit, whatever ``sync_files`` says: the commit protocol relies on it. ``thread_count``,
    ``per_thread_copy_ahead`` and ``cache_staged_state_dict`` are accepted for PyTorch compatibility; writing
    is single-threaded. ``overwrite=False`` refuses a directory that already holds a checkpoint.
    """

    def __init__(self, path: str | os.PathLike, single_file_per_rank: bool = True, sync_files: bool = True,
                 thread_count: int = 1, per_thread_copy_ahead: int = 10_000_000,
                 cache_staged_state_dict: bool = False, overwrite: bool = True, _extensions=None,
                 serialization_format=None) -> None:
        if _extensions or serialization_format not in (None, "torch_save"):
            raise ValueError("FileSystemWriter: Ember writes its own raw chunk format; _extensions and other "
                             "serialization formats are not supported")
        self.path = os.fspath(path)
        self.single_file_per_rank = single_file_per_rank
        self.sync_files = sync_files
        self.overwrite = overwrite

    def prepare(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        if not self.overwrite and os.path.exists(os.path.join(self.path, METADATA_NAME)):
            raise RuntimeError(f"Checkpoint already exists at {self.path} and overwrite=False.")

    def write_data(self, rank: int, save_id: str,
                   payloads: list[Payload]) -> tuple[dict[str, FileRecord], list[Location]]:
        if self.single_file_per_rank:
            groups = [(f"__{rank}_{save_id}.distcp", payloads)] if payloads else []
        else:
            groups = [(f"__{rank}_{i}_{save_id}.distcp", [p]) for i, p in enumerate(payloads)]
        files: dict[str, FileRecord] = {}
        locations: list[Location] = []
        for name, group in groups:
            files[name], written = _write_data_file(os.path.join(self.path, name), save_id, group)
            locations.extend(written)
        return files, locations

    def commit(self, metadata: Metadata) -> None:
        with atomic_path(os.path.join(self.path, METADATA_NAME)) as temp, open(temp, "w") as out:
            out.write(metadata.to_json())
        _remove_unreferenced(self.path, set(metadata.files))


class FileSystemReader(_Directory, StorageReader):
    """Reads the checkpoint in directory ``path``."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def read_metadata(self) -> Metadata:
        where = os.path.join(self.path, METADATA_NAME)
        try:
            with open(where, "rb") as f:
                text = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"no checkpoint at {self.path}: {where} does not exist") from None
        metadata = Metadata.from_json(text, where)
        for name in metadata.files:
            if not DATA_NAME.fullmatch(name):
                raise CheckpointError(f"checkpoint metadata {where} names a data file {name!r} that is not a "
                                      f"checkpoint data file name")
        return metadata

    def read_file(self, name: str, metadata: Metadata) -> bytes:
        path = os.path.join(self.path, name)
        record = metadata.files[name]
        try:
            with open(path, "rb") as f:
                found = os.fstat(f.fileno()).st_size
                data = f.read(record.size) if found >= record.size else f.read()
        except FileNotFoundError:
            raise CheckpointError(f"checkpoint file {path} is missing") from None
        _verify(path, data, found, record, metadata.save_id)
        return data


def _write_data_file(path: str, save_id: str, payloads: list[Payload]) -> tuple[FileRecord, list[Location]]:
    name = os.path.basename(path)
    header = MAGIC + save_id.encode("ascii")
    locations = []
    with atomic_path(path) as temp, open(temp, "wb") as out:
        out.write(header)
        size, crc = len(header), zlib.crc32(header)
        for make in payloads:
            data = make()
            out.write(data)
            crc = zlib.crc32(data, crc)
            locations.append(Location(name, size, data.nbytes))
            size += data.nbytes
    return FileRecord(size, crc), locations


def _verify(path: str, data: bytes, found: int, record: FileRecord, save_id: str) -> None:
    """The file must be the one the metadata describes: this save's, whole and unchanged."""
    if len(data) >= HEADER_SIZE:
        if data[:len(MAGIC)] != MAGIC:
            raise CheckpointError(f"checkpoint file {path} is not an Ember checkpoint data file")
        written_by = data[len(MAGIC):HEADER_SIZE].decode("ascii", "replace")
        if written_by != save_id:
            raise CheckpointError(f"checkpoint file {path} does not belong to this checkpoint: it was written by "
                                  f"save {written_by}, the metadata expects save {save_id}")
    if found < record.size:
        raise CheckpointError(f"checkpoint file {path} is truncated: expected {record.size} bytes, found {found}")
    if found > record.size:
        raise CheckpointError(f"checkpoint file {path} has {found} bytes, expected {record.size}: it was changed "
                              f"after the save")
    crc = zlib.crc32(data)
    if crc != record.crc32:
        raise CheckpointError(f"checkpoint file {path} is corrupted: checksum mismatch (crc32 {crc:08x}, expected "
                              f"{record.crc32:08x})")


def _remove_unreferenced(directory: str, referenced: set[str]) -> None:
    """Remove data files of earlier or killed saves, and temporary files that killed saves left behind."""
    with os.scandir(directory) as entries:
        names = [entry.name for entry in entries]
    for name in names:
        if DATA_NAME.fullmatch(name) and name not in referenced:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
        elif (temp := DATA_TEMP.fullmatch(name)) is not None:
            remove_abandoned_temps(directory, temp.group(1))  # a save still writing holds its lock: kept
