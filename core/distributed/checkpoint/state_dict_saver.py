"""``save``: every rank writes its share of a state dict, then one metadata file commits the checkpoint."""
from __future__ import annotations

import os

from .coordination import Ranks
from .default_planner import DefaultSavePlanner, checked_planner
from .filesystem import FileSystemWriter
from .flatten import flatten_state_dict
from .metadata import Metadata
from .planning import build_metadata, local_items, new_save_id, payload, plan_save
from .storage import StorageWriter, storage_setup


def save(state_dict: dict, *, checkpoint_id: str | os.PathLike | None = None,
         storage_writer: StorageWriter | None = None, planner: DefaultSavePlanner | None = None,
         process_group=None, no_dist: bool = False) -> Metadata:
    """Save ``state_dict`` (nested dicts and lists of tensors, ``ShardedTensor`` pieces and plain values).

    A collective over ``process_group`` (the default group when initialized; this process alone without one
    or with ``no_dist=True``): each rank writes the chunks the plan gives it, rank 0 the non-tensor values, and
    rank 0 commits the metadata only after every rank has durably written its file. Returns the metadata.
    """
    writer = storage_setup(storage_writer, checkpoint_id, FileSystemWriter, "save", "writer")
    checked_planner(planner, DefaultSavePlanner, "save")
    ranks = Ranks(process_group, no_dist, "save")
    flat: dict = {}

    def describe_local_items():
        flat.update(flatten_state_dict(state_dict)[0])
        writer.prepare()
        return new_save_id(), local_items(flat)
    proposals = ranks.all_gather(describe_local_items)
    save_id = proposals[0][0]  # rank 0's
    plan = plan_save([items for _, items in proposals])
    mine = [payload(flat[item.key]) for item in plan.writes[ranks.rank]]
    written = ranks.all_gather(lambda: writer.write_data(ranks.rank, save_id, mine))
    metadata = build_metadata(save_id, plan, written)
    ranks.on_coordinator(lambda: writer.commit(metadata))
    return metadata
