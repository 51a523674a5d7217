"""The exceptions of ``ember.serialization``."""
from __future__ import annotations

import contextlib
import os
import pickle
from typing import Iterator

from ..dispatch.schema.errors import EmberError


class CheckpointError(EmberError, ValueError):
    """A file that is not a well-formed checkpoint; raised instead of guessing, and instead of running it."""


class UnpicklingError(CheckpointError, pickle.UnpicklingError):
    """A pickle inside a checkpoint that ``weights_only`` loading refuses (or that is malformed).

    Also a ``pickle.UnpicklingError``, which is what code written for ``torch.load`` catches.
    """


def describe_file(f) -> str:
    """How an error names the file it is about: its path, or the stream's name, or the kind of stream."""
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.fsdecode(f)
    name = getattr(f, "name", None)  # open() files know their path
    return os.fsdecode(name) if isinstance(name, (str, bytes)) else f"<{type(f).__name__} stream>"


@contextlib.contextmanager
def in_file(function: str, f) -> Iterator[None]:
    """Prefix every ``CheckpointError`` raised inside with ``function`` and the file, keeping its type and cause."""
    try:
        yield
    except CheckpointError as exc:
        message = str(exc.args[0]) if exc.args else ""
        for prefix in (f"{function}: ", "ember.load: "):
            message = message.removeprefix(prefix)
        exc.args = (f"{function}: {describe_file(f)}: {message}",)
        raise
