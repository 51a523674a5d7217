"""Where a checkpoint's bytes live: the ``StorageWriter`` and ``StorageReader`` interfaces.

``save`` calls, on every rank, ``prepare()`` and then ``write_data(...)`` with the payloads the plan gave that
rank; once every rank has written, the coordinator (group rank 0) alone calls ``commit(metadata)``, which must
make the checkpoint visible atomically. ``load`` calls ``read_metadata()`` and ``read_file(...)`` on every rank.
"""
from __future__ import annotations

import abc
import os
from typing import Callable

import numpy as np

from .metadata import FileRecord, Location, Metadata

Payload = Callable[[], np.ndarray]  # produces one item's bytes (uint8, contiguous) when the writer gets to it


class StorageWriter(abc.ABC):
    @abc.abstractmethod
    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Point the writer at a new checkpoint (``save(checkpoint_id=...)`` with this writer)."""

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        """Whether this writer can store at ``checkpoint_id``."""

    def prepare(self) -> None:
        """Check and create what the save needs (runs on every rank before anything is written)."""

    @abc.abstractmethod
    def write_data(self, rank: int, save_id: str,
                   payloads: list[Payload]) -> tuple[dict[str, FileRecord], list[Location]]:
        """Durably store this rank's payloads under names unique to ``save_id``; return the files written
        and each payload's location, in order."""

    @abc.abstractmethod
    def commit(self, metadata: Metadata) -> None:
        """Make the checkpoint described by ``metadata`` the current one, atomically."""


class StorageReader(abc.ABC):
    @abc.abstractmethod
    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Point the reader at another checkpoint."""

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        """Whether this reader can read ``checkpoint_id``."""

    @abc.abstractmethod
    def read_metadata(self) -> Metadata:
        """The committed checkpoint's metadata."""

    @abc.abstractmethod
    def read_file(self, name: str, metadata: Metadata) -> bytes:
        """The whole data file ``name``, checked against ``metadata`` (size, checksum, save id)."""


def storage_setup(storage, checkpoint_id, default: type, op_name: str, kind: str):
    """The storage a ``save``/``load`` call means: ``storage`` (reset to ``checkpoint_id`` when both are
    given), else ``default(checkpoint_id)``, as PyTorch chooses."""
    if storage is not None:
        if checkpoint_id is not None:
            storage.reset(checkpoint_id)
        return storage
    if checkpoint_id is None:
        raise RuntimeError(f"{op_name}: `checkpoint_id` must be specified if storage_{kind} is None.")
    if not default.validate_checkpoint_id(checkpoint_id):
        raise RuntimeError(f"{op_name}: cannot detect which storage to use for checkpoint_id {checkpoint_id!r} "
                           f"(expected a directory path); please pass storage_{kind}.")
    return default(checkpoint_id)
