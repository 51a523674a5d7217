"""Nested state dicts as flat dotted keys, as PyTorch's ``flatten_state_dict`` makes them.

Dicts are always walked; a list is walked only when it holds a tensor, a dict or a walkable list (an optimizer's
``param_groups``), otherwise it is one value (``params: [0, 1]``), like every other non-dict leaf. Each flat key
keeps its path, so a loaded non-tensor value can be put back where it came from.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...tensor import Tensor
from ..sharded_tensor import ShardedTensor

Path = tuple  # of dict keys and list indices, as found in the state dict


def flatten_state_dict(state_dict: Mapping) -> tuple[dict[str, Any], dict[str, Path]]:
    """``({"model.w": leaf, ...}, {"model.w": ("model", "w"), ...})`` in the dict's own order."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a dict, got {type(state_dict).__name__}")
    flat: dict[str, Any] = {}
    paths: dict[str, Path] = {}

    def visit(path: Path, value) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                visit(path + (key,), item)
        elif isinstance(value, list) and _walkable(value):
            for index, item in enumerate(value):
                visit(path + (index,), item)
        else:
            key = ".".join(str(step) for step in path)
            if key in flat:
                raise ValueError(f"duplicated flatten key {key}")
            flat[key], paths[key] = value, path

    visit((), state_dict)
    return flat, paths


def set_element(root, path: Path, value) -> None:
    """Replace the leaf at ``path`` inside ``root``."""
    node = root
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def is_tensor_like(value) -> bool:
    return isinstance(value, (Tensor, ShardedTensor))


def _walkable(items: list) -> bool:
    return any(isinstance(item, Mapping) or is_tensor_like(item) or (isinstance(item, list) and _walkable(item))
               for item in items)
