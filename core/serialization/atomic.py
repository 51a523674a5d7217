"""Atomic file replacement: readers, and a crash at any moment, see the old file or the whole new one."""
from __future__ import annotations

import contextlib
import os
import secrets
import stat


@contextlib.contextmanager
def atomic_path(path):
    """Yield a fresh temporary path beside ``path``; once the body has written it, fsync it and rename
    it over ``path``.

    The rename is atomic, so readers (and a crash at any moment) see either the old file or the
    complete new one. On an exception the temporary file is removed; after a SIGKILL it stays behind as
    ``.NAME.*.tmp`` next to an intact ``NAME``. Symlinks are written through, as ``open(path, "wb")`` would.
    """
    target = os.path.realpath(os.fsdecode(os.fspath(path)))
    directory, name = os.path.split(target)
    temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        yield temp
        _fsync_file(temp)
        _copy_permissions(target, temp)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(directory)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_permissions(target: str, temp: str) -> None:
    """Overwriting a checkpoint keeps its mode; a new one gets open()'s default (0o666 less the umask)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable; some platforms and file systems cannot, which is fine."""
    flag = getattr(os, "O_DIRECTORY", None)
    if flag is None:
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | flag)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
