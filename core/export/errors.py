"""The errors of ``ember.export`` and ``ember.jit``."""
from __future__ import annotations

from ..dispatch.schema.errors import EmberError
from ..serialization.errors import CheckpointError


class ExportError(EmberError):
    """A program that cannot be exported as asked: the message names the input, dimension, op or source line."""


class ExportLoadError(CheckpointError):
    """A file that ``ember.export.load`` or ``ember.jit.load`` refuses: not a well-formed exported program, or one
    that names what this process does not have (an op no library registered). Nothing from it was run."""


__all__ = ["ExportError", "ExportLoadError"]
