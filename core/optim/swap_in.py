"""``swap_in_optimizer_params_and_state``: run an optimizer's API on other parameters and state for a while."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, Iterator

from ..tensor import Tensor
from .optimizer import Optimizer, saved_param_groups


def _check(optimizer: Optimizer, parameters: list, state_dict: dict[str, Any]) -> list[dict[str, Any]]:
    """The saved groups, after checking they match the live ones and the parameters given, as PyTorch does."""
    groups = saved_param_groups(optimizer, state_dict, "swap_in_optimizer_params_and_state", "swapin_optim_state",
                                RuntimeError)
    ids = [i for group in groups for i in group["params"]]
    if len(ids) != len(parameters):
        raise RuntimeError(f"swap_in_optimizer_params_and_state requires the explicit parameter state to match "
                           f"optimizer.param_groups ordering: {len(parameters)} parameters given, "
                           f"{len(ids)} in swapin_optim_state's param_groups")
    extra = [key for key in state_dict["state"] if key not in set(ids)]
    if extra:
        raise RuntimeError(f"swap_in_optimizer_params_and_state requires swapin_optim_state['state'] to be keyed "
                           f"only by packed parameter ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return groups


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer, swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]) -> Iterator[None]:
    """Inside the block, ``optimizer`` works on ``swapin_parameters`` (in ``param_groups`` order, as from
    ``named_parameters()``) with the state and hyperparameters of ``swapin_optim_state`` (an
    ``optimizer.state_dict()``-shaped dict); on exit the live parameters, groups and state come back.

    The state the step leaves for each parameter is written back into ``swapin_optim_state["state"]``, into
    the tensors it holds where it can (Ember's optimizers replace state tensors where PyTorch's edit them in
    place; writing back gives the same observable effect). Keys the step adds are not written back, as in PyTorch.
    """
    parameters = list(swapin_parameters.values())
    groups = _check(optimizer, parameters, swapin_optim_state)
    saved_state, snapshots = optimizer.state, [dict(group) for group in optimizer.param_groups]
    per_param: list[tuple[Tensor, dict[str, Any]]] = []
    try:
        swapped: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        offset = 0
        for live, group in zip(optimizer.param_groups, groups):
            params = parameters[offset:offset + len(group["params"])]
            offset += len(params)
            live.update({key: value for key, value in group.items() if key != "params"}, params=params)
            for param, key in zip(params, group["params"]):
                original = swapin_optim_state["state"].get(key, {})
                swapped[param] = dict(original)
                per_param.append((param, original))
        optimizer.state = swapped
        yield
    finally:
        for param, original in per_param:
            _write_back(original, optimizer.state.get(param, {}))
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = saved_state


def _write_back(original: dict[str, Any], current: dict[str, Any]) -> None:
    for key in original:
        if key not in current or current[key] is original[key]:
            continue
        old, new = original[key], current[key]
        if isinstance(old, Tensor) and isinstance(new, Tensor) and tuple(old.shape) == tuple(new.shape):
            old.copy_(new.detach())
        else:
            original[key] = new
