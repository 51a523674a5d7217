"""The exceptions of ``ember.serialization``."""
from __future__ import annotations

import pickle

from ..dispatch.errors import EmberError


class CheckpointError(EmberError, ValueError):
    """A file that is not a well-formed checkpoint; raised instead of guessing, and instead of running it."""


class UnpicklingError(CheckpointError, pickle.UnpicklingError):
    """A pickle inside a checkpoint that ``weights_only`` loading refuses (or that is malformed).

    Also a ``pickle.UnpicklingError``, which is what code written for ``torch.load`` catches.
    """
