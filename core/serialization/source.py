"""Bounds-checked random access to a checkpoint inside a binary stream, whatever kind of stream it is."""
from __future__ import annotations

import io
import os

import numpy as np

from .errors import CheckpointError


class Source:
    """The checkpoint starts at the stream's position; pipes and sockets are read into memory first."""

    def __init__(self, stream) -> None:
        if isinstance(stream, io.TextIOBase):
            raise TypeError("ember.load: the file is open in text mode; open it in binary mode ('rb')")
        if not (hasattr(stream, "seekable") and stream.seekable()):
            stream = io.BytesIO(stream.read())  # a pipe or socket: the footer is at the end
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
