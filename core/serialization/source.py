"""Bounds-checked random access to a checkpoint inside a binary stream, whatever kind of stream it is."""
from __future__ import annotations

import io
import os
import sys
import tempfile
from typing import Callable

import numpy as np

from .errors import CheckpointError


class Source:
    """The checkpoint starts at the stream's position. Pipes and sockets are buffered first (``spool``), after
    ``recognise`` has accepted their first bytes."""

    def __init__(self, stream, recognise: Callable[[bytes], object] | None = None) -> None:
        if isinstance(stream, io.TextIOBase):
            raise TypeError("ember.load: the file is open in text mode; open it in binary mode ('rb')")
        if not (hasattr(stream, "seekable") and stream.seekable()):
            stream = spool(stream, recognise)  # a pipe or socket: the footer is at the end
        self.stream = stream
        self.base = stream.tell()
        self.size = stream.seek(0, os.SEEK_END) - self.base

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        """``nbytes`` bytes at ``offset`` as a fresh, writable uint8 array the caller owns."""
        buffer = np.empty(nbytes, np.uint8)
        view = memoryview(buffer)
        self.stream.seek(self.base + offset)
        readinto = getattr(self.stream, "readinto", None)
        filled = 0
        while filled < nbytes:
            if readinto is not None:
                count = readinto(view[filled:])
            else:
                chunk = self.stream.read(nbytes - filled)
                count = len(chunk)
                view[filled:filled + count] = chunk
            if not count:
                raise CheckpointError(f"the file ends at byte {self.base + offset + filled}, inside data "
                                      f"that should run to byte {self.base + offset + nbytes}: it is truncated")
            filled += count
        return buffer

    def read_bytes(self, offset: int, nbytes: int) -> bytes:
        """Like ``read``, as bytes: one read where the stream returns it all at once (files do), else a copy."""
        self.stream.seek(self.base + offset)
        data = self.stream.read(nbytes)
        if isinstance(data, bytes) and len(data) == nbytes:
            return data
        return self.read(offset, nbytes).tobytes()

    def head(self, nbytes: int) -> bytes:
        return bytes(self.read(0, min(nbytes, self.size)))

    def tail(self, nbytes: int) -> bytes:
        return bytes(self.read(self.size - min(nbytes, self.size), min(nbytes, self.size)))

    def rest(self):
        """A seekable stream holding just the checkpoint, positioned at its start (for zip and pickle readers)."""
        if self.base == 0:
            self.stream.seek(0)
            return self.stream
        return io.BytesIO(self.read(0, self.size).tobytes())

    def finish(self) -> None:
        """Leave the stream after the checkpoint, as a read would."""
        self.stream.seek(self.base + self.size)


_CHUNK = 2 ** 20
HEAD_BYTES = 64  # what ``recognise`` sees of a stream before anything more is read
SPOOL_MEMORY_BYTES = 8 * 2 ** 20  # a buffered stream stays in memory up to this, then moves to a temporary file


def max_stream_bytes() -> int:
    """The knob ``ember.serialization.MAX_STREAM_BYTES``, read at each load so that it can be changed."""
    return sys.modules[__package__].MAX_STREAM_BYTES


def spool(stream, recognise: Callable[[bytes], object] | None = None):
    """A non-seekable stream as a seekable file: its first ``HEAD_BYTES`` go to ``recognise`` (which raises for
    anything that is not a checkpoint, so junk and a wrong format end there), then the rest is copied in chunks,
    in memory up to ``SPOOL_MEMORY_BYTES`` and on disk beyond, up to ``MAX_STREAM_BYTES`` in all. Memory stays
    bounded however long the stream is, and an endless one ends with a clear error."""
    limit = max_stream_bytes()
    head = _read_up_to(stream, HEAD_BYTES)
    if recognise is not None:
        recognise(head)
    buffer = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES, prefix="ember-stream-")
    try:
        buffer.write(head)
        while True:
            chunk = stream.read(min(_CHUNK, limit + 1 - buffer.tell()))
            if not chunk:
                break
            buffer.write(chunk)
            if buffer.tell() > limit:
                raise CheckpointError(f"the stream is not seekable, so it is buffered first, and it goes on past "
                                      f"{limit} bytes (ember.serialization.MAX_STREAM_BYTES); save the checkpoint "
                                      f"to a file, or pass a seekable file object")
    except BaseException:
        buffer.close()
        raise
    buffer.seek(0)
    return buffer


def names_a_zip_entry(head: bytes) -> bool:
    """Whether ``head`` starts with a zip local-file header whose entry has a name (every archive Ember or
    torch.save writes does; zeros after the signature do not)."""
    return head[:4] == b"PK\x03\x04" and len(head) >= 30 and int.from_bytes(head[26:28], "little") > 0


def _read_up_to(stream, nbytes: int) -> bytes:
    """Up to ``nbytes`` from the start of a stream, fewer only where it ends first (a pipe may return less)."""
    head = b""
    while len(head) < nbytes:
        chunk = stream.read(nbytes - len(head))
        if not chunk:
            break
        head += chunk
    return head
