"""Atomic file replacement: readers, and a crash at any moment, see the old file or the whole new one.

A save writes ``.NAME.<random>.tmp`` beside ``NAME`` and renames it over ``NAME``. While it does, it holds an
exclusive ``flock`` on that temporary file. The kernel drops the lock when the writer dies, however it dies
(``kill -9`` included), so the next save of ``NAME`` can tell temporary files that a killed save left behind
(unlocked: removed) from another process's save in progress (locked: left alone), with no guess from file ages.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat

try:
    import fcntl
except ImportError:  # Windows: a file another process has open cannot be removed, which protects it instead
    fcntl = None


@contextlib.contextmanager
def atomic_path(path):
    """Yield a fresh, locked temporary path beside ``path``; once the body has written it, fsync it and rename
    it over ``path``.

    The rename is atomic, so readers (and a crash at any moment) see either the old file or the
    complete new one. On an exception the temporary file is removed; after a SIGKILL it stays behind as
    ``.NAME.*.tmp`` next to an intact ``NAME`` until the next save of ``NAME`` removes it. Symlinks are
    written through, as ``open(path, "wb")`` would.
    """
    target = os.path.realpath(os.fsdecode(os.fspath(path)))
    directory, name = os.path.split(target)
    remove_abandoned_temps(directory, name)
    temp, lock = _locked_temp(directory, name)
    try:
        yield temp
        _fsync_file(temp)
        _copy_permissions(target, temp)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    finally:
        if lock is not None:
            os.close(lock)  # only now, after the rename, may another save treat the temporary file as abandoned
    _fsync_directory(directory)


def _temp_pattern(name: str) -> re.Pattern:
    return re.compile(re.escape(f".{name}.") + r"[0-9a-f]{12}\.tmp")


def _locked_temp(directory: str, name: str) -> tuple[str, int | None]:
    """A new temporary file and the descriptor holding its lock (None without ``flock``). A concurrent cleanup
    may remove the file between its creation and the lock; then the locked inode is no longer at that path,
    and we start over."""
    while True:
        temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        if fcntl is None:
            os.close(fd)  # Windows cannot rename a file that is open
            return temp, None
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _same_file(temp, fd):
            return temp, fd
        os.close(fd)


def remove_abandoned_temps(directory: str, name: str) -> None:
    """Remove the temporary files of earlier saves of ``name`` that were killed; saves in progress keep theirs."""
    pattern = _temp_pattern(name)
    with contextlib.suppress(OSError), os.scandir(directory or ".") as entries:
        stale = [entry.path for entry in entries if pattern.fullmatch(entry.name)]
    for temp in stale:
        _remove_if_abandoned(temp)


def _remove_if_abandoned(temp: str) -> None:
    if fcntl is None:
        with contextlib.suppress(OSError):
            os.unlink(temp)  # fails while its writer still has it open
        return
    try:
        fd = os.open(temp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return  # gone already: its save finished or another cleanup removed it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _same_file(temp, fd):  # not renamed over its target since we opened it
            os.unlink(temp)
    except OSError:
        pass  # locked: a save in progress
    finally:
        os.close(fd)


def _same_file(path: str, fd: int) -> bool:
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


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
