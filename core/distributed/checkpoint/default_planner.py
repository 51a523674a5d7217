"""``DefaultSavePlanner`` and ``DefaultLoadPlanner``: the options PyTorch's default planners take.

Ember plans saves and loads one way (``planning``, ``resharding``); these carry the options that change it.
"""
from __future__ import annotations


class DefaultSavePlanner:
    """State dicts are always flattened, and replicated chunks always written once, by the lowest rank."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None, dedup_save_to_lowest_rank: bool = False,
                 enable_plan_caching: bool = False) -> None:
        if not flatten_state_dict:
            raise NotImplementedError("DefaultSavePlanner: flatten_state_dict=False is not supported")


class DefaultLoadPlanner:
    """``allow_partial_load=True`` skips the keys of the target state dict that the checkpoint lacks."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False) -> None:
        if not flatten_state_dict:
            raise NotImplementedError("DefaultLoadPlanner: flatten_state_dict=False is not supported")
        self.allow_partial_load = allow_partial_load


def checked_planner(planner, default: type, op_name: str):
    if planner is None:
        return default()
    if not isinstance(planner, default):
        raise TypeError(f"{op_name}: planner must be a {default.__name__} (or None), got {type(planner).__name__}")
    return planner
