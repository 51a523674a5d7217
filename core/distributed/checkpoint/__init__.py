"""``ember.distributed.checkpoint``: PyTorch's distributed checkpoint (DCP) API.

``save`` writes a state dict of tensors, ``ShardedTensor`` pieces and plain values as one data file per rank
plus a ``.metadata`` file committed last; ``load`` fills a state dict in place, resharding to any world size.
``get_state_dict``/``set_state_dict`` and friends come from ``state_dict`` (imported on first use).
See docs/distributed.md.
"""
from __future__ import annotations

import importlib

from .coordination import CheckpointException
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner
from .filesystem import FileSystemReader, FileSystemWriter
from .metadata import Metadata
from .state_dict_loader import load
from .state_dict_saver import save
from .storage import StorageReader, StorageWriter

_FROM_STATE_DICT = ("get_state_dict", "set_state_dict", "get_model_state_dict", "get_optimizer_state_dict",
                    "set_model_state_dict", "set_optimizer_state_dict", "StateDictOptions")

__all__ = ["CheckpointException", "DefaultLoadPlanner", "DefaultSavePlanner", "FileSystemReader",
           "FileSystemWriter", "Metadata", "StorageReader", "StorageWriter", "load", "save", *_FROM_STATE_DICT]


def __getattr__(name: str):
    """The state-dict helpers, imported only when asked for, so this package works without them."""
    if name in _FROM_STATE_DICT:
        return getattr(importlib.import_module(f"{__name__}.state_dict"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
