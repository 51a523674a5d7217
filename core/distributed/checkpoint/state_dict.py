"""PyTorch's ``torch.distributed.checkpoint.state_dict``: one way to get and set the state of any model and
its optimizers, sharded (FSDP) or not, keyed by parameter names.

For FSDP models the model's values are ``ShardedTensor`` pieces (``full_state_dict=False``, what
``dcp.save``/``dcp.load`` reshard) or whole tensors; optimizer state is keyed by parameter names either way,
so a checkpoint moves between FSDP, DDP and plain models and across world sizes.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator

from ...nn.modules.module import IncompatibleKeys, Module
from ..fsdp import optim_state, state_dicts
from ..fsdp.api import FullStateDictConfig, StateDictType
from ..fsdp.construction import is_unit

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
           "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"]


@dataclass
class StateDictOptions:
    """``full_state_dict``: whole tensors instead of shards; ``cpu_offload``: on the cpu (with
    ``full_state_dict``, on rank 0 only, as PyTorch); ``strict``: loading checks keys;
    ``ignore_frozen_params``: leave out parameters that do not require grad."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def get_model_state_dict(model: Module, *, submodules=None, options: StateDictOptions | None = None) -> dict:
    options = options or StateDictOptions()
    root = _unwrapped(model)
    with _state_dict_type(root, options):
        out = state_dicts.module_state_dict(root)
    if options.ignore_frozen_params:
        frozen = {name for name, p in root.named_parameters() if not p.requires_grad}
        out = {k: v for k, v in out.items() if k not in frozen}
    return dict(out)


def get_optimizer_state_dict(model: Module, optimizers, *, submodules=None,
                             options: StateDictOptions | None = None) -> dict:
    options = options or StateDictOptions()
    root = _unwrapped(model)
    merged: dict = {"state": {}, "param_groups": []}
    for optim in _as_list(optimizers):
        keyed = optim_state._keyed(root, optim, full=options.full_state_dict or not _has_units(root),
                                   offload=options.cpu_offload)
        merged["state"].update(keyed["state"])
        merged["param_groups"].extend(keyed["param_groups"])
    if options.full_state_dict and options.cpu_offload and not _is_rank0():
        return {}
    return merged


def get_state_dict(model: Module, optimizers, *, submodules=None,
                   options: StateDictOptions | None = None) -> tuple[dict, dict]:
    """(model state dict, optimizer state dict), keyed by parameter names."""
    return (get_model_state_dict(model, options=options),
            get_optimizer_state_dict(model, optimizers, options=options))


def set_model_state_dict(model: Module, model_state_dict: dict, *,
                         options: StateDictOptions | None = None) -> IncompatibleKeys:
    options = options or StateDictOptions()
    root = _unwrapped(model)
    with _state_dict_type(root, options):
        return state_dicts.load_module_state_dict(root, model_state_dict, options.strict)


def set_optimizer_state_dict(model: Module, optimizers, optim_state_dict: dict, *,
                             options: StateDictOptions | None = None) -> None:
    root = _unwrapped(model)
    for optim in _as_list(optimizers):
        optim.load_state_dict(optim_state.to_load(root, optim, _for_optimizer(root, optim, optim_state_dict)))


def set_state_dict(model: Module, optimizers, *, model_state_dict: dict, optim_state_dict: dict,
                   options: StateDictOptions | None = None) -> IncompatibleKeys:
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys


# -- helpers -------------------------------------------------------------------------------------------
def _unwrapped(model: Module) -> Module:
    """DistributedDataParallel's replica (its names have no ``module.`` prefix in these state dicts)."""
    from ...nn.parallel.distributed import DistributedDataParallel
    return model.module if isinstance(model, DistributedDataParallel) else model


def _has_units(model: Module) -> bool:
    return any(is_unit(m) for m in model.modules())


@contextmanager
def _state_dict_type(model: Module, options: StateDictOptions) -> Iterator[None]:
    units = [m.__dict__["_fsdp_state"] for m in model.modules() if is_unit(m)]
    if not units:
        yield
        return
    if options.full_state_dict:
        previous = state_dicts.set_type(units, StateDictType.FULL_STATE_DICT,
                                        FullStateDictConfig(offload_to_cpu=options.cpu_offload,
                                                            rank0_only=options.cpu_offload))
    else:
        previous = state_dicts.set_type(units, StateDictType.SHARDED_STATE_DICT)
    try:
        yield
    finally:
        state_dicts.set_type(units, previous.state_dict_type, previous.state_dict_config,
                             previous.optim_state_dict_config)


def _for_optimizer(model: Module, optim, merged: dict) -> dict:
    """The part of a merged optimizer state dict that belongs to ``optim``: its parameters' states and the
    groups made of its parameters' names."""
    targets = optim_state._targets(model)
    own = {fqn for p in optim_state._optim_params(optim) for fqn in targets[id(p)].fqns if id(p) in targets}
    groups = [g for g in merged.get("param_groups", []) if set(g.get("params", [])) <= own]
    state = {k: v for k, v in merged.get("state", {}).items() if k in own}
    return {"state": state, "param_groups": groups}


def _as_list(optimizers) -> list:
    return list(optimizers) if isinstance(optimizers, Iterable) and not hasattr(optimizers, "param_groups") \
        else [optimizers]


def _is_rank0() -> bool:
    from .. import state as dist_state
    return not dist_state.is_initialized() or dist_state.get_rank() == 0
