"""``load``: fill a state dict in place from a checkpoint saved at any world size."""
from __future__ import annotations

import os

from .coordination import Ranks
from .default_planner import DefaultLoadPlanner, checked_planner
from .filesystem import FileSystemReader
from .flatten import flatten_state_dict
from .resharding import plan_reads, reads_by_file
from .storage import StorageReader, storage_setup


def load(state_dict: dict, *, checkpoint_id: str | os.PathLike | None = None,
         storage_reader: StorageReader | None = None, planner: DefaultLoadPlanner | None = None,
         process_group=None, no_dist: bool = False) -> None:
    """Load into ``state_dict`` in place: its tensors and ``ShardedTensor`` pieces receive the saved values
    of their elements (however the checkpoint was split), its non-tensor values are replaced.

    Each rank reads only the data files holding chunks it needs, each once, and checks them against the
    metadata. With a process group, a failure on any rank raises on every rank.
    """
    reader = storage_setup(storage_reader, checkpoint_id, FileSystemReader, "load", "reader")
    options = checked_planner(planner, DefaultLoadPlanner, "load")
    ranks = Ranks(process_group, no_dist, "load")
    ranks.all_gather(lambda: _load_here(state_dict, reader, options.allow_partial_load))


def _load_here(state_dict: dict, reader: StorageReader, allow_partial_load: bool) -> None:
    metadata = reader.read_metadata()
    flat, paths = flatten_state_dict(state_dict)
    reads = plan_reads(flat, paths, metadata, allow_partial_load, getattr(reader, "path", type(reader).__name__))
    for name, wanted in reads_by_file(reads).items():
        data = reader.read_file(name, metadata)
        for read, chunk in wanted:
            read.take(data, chunk)
    for read in reads:
        read.apply(state_dict)
