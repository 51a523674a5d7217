"""Model state dicts of FSDP models: FULL (whole tensors, PyTorch's names), SHARDED (``ShardedTensor``s
sharing memory with the shards, for ``ember.distributed.checkpoint``) and LOCAL (each unit's flat shard).

FULL and SHARDED state dicts load into a model at any world size: FULL copies each rank's slice out of
the whole tensors; SHARDED copies pieces that match this rank's (``dcp.load`` reshards into them first).
"""
from __future__ import annotations

from collections import OrderedDict

from ...autograd.grad_mode import no_grad
from ...nn.modules.module import IncompatibleKeys, Module
from ...tensor import Tensor
from .. import state as dist_state
from ..sharded_tensor import ShardedTensor
from .api import (FullOptimStateDictConfig, FullStateDictConfig, LocalOptimStateDictConfig, LocalStateDictConfig,
                  ShardedOptimStateDictConfig, ShardedStateDictConfig, StateDictSettings, StateDictType)
from .construction import is_unit
from .flat_param import FlatParamHandle
from .walk import Entry, entries

_CONFIGS = {StateDictType.FULL_STATE_DICT: (FullStateDictConfig, FullOptimStateDictConfig),
            StateDictType.SHARDED_STATE_DICT: (ShardedStateDictConfig, ShardedOptimStateDictConfig),
            StateDictType.LOCAL_STATE_DICT: (LocalStateDictConfig, LocalOptimStateDictConfig)}


def default_settings() -> StateDictSettings:
    return StateDictSettings(StateDictType.FULL_STATE_DICT, FullStateDictConfig(), FullOptimStateDictConfig())


def settings_of(units: list) -> StateDictSettings:
    if not units:
        raise ValueError("state_dict_type: the module holds no FSDP unit")
    return getattr(units[0], "state_dict_settings", None) or default_settings()


def set_type(units: list, kind: StateDictType, config=None, optim_config=None) -> StateDictSettings:
    """Give every unit the state-dict type; returns the settings it had."""
    previous = settings_of(units)
    model_cls, optim_cls = _CONFIGS[StateDictType(kind)]
    settings = StateDictSettings(kind, config or model_cls(), optim_config or optim_cls())
    for unit in units:
        unit.state_dict_settings = settings
    return previous


def settings_for(module: Module) -> StateDictSettings:
    units = [m.__dict__["_fsdp_state"] for m in module.modules() if is_unit(m)]
    return settings_of(units) if units else default_settings()


class FullGathers:
    """Each handle's whole flat vector, gathered once per state dict (every rank gathers in the same order)."""

    def __init__(self, offload_to_cpu: bool = False) -> None:
        self.offload = offload_to_cpu
        self._full: dict[int, Tensor] = {}

    def value(self, entry: Entry) -> Tensor:
        handle, info = entry.handle, entry.info
        full = self._full.get(id(handle))
        if full is None:
            full = handle.gather_full()
            self._full[id(handle)] = full = full.cpu() if self.offload else full
        return info.view_of(full).clone()


def sharded_value(entry: Entry) -> ShardedTensor:
    """This rank's piece of a managed parameter, sharing memory with its shard."""
    handle, info = entry.handle, entry.info
    first, _ = handle.local_range(info)
    return ShardedTensor(handle.shard_slice(handle.flat_param.detach(), info), info.shape, first,
                         handle.groups.shard)


def local_value(handle: FlatParamHandle) -> ShardedTensor:
    return ShardedTensor(handle.flat_param.detach(), (handle.padded_numel,), handle.shard_start, handle.groups.shard)


def module_state_dict(module: Module, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
    """``module.state_dict()`` under the state-dict type set with ``FSDP.state_dict_type``."""
    settings = settings_for(module)
    kind, config = settings.state_dict_type, settings.state_dict_config
    out = OrderedDict() if destination is None else destination
    gathers = FullGathers(getattr(config, "offload_to_cpu", False))
    keep = not (getattr(config, "rank0_only", False) and dist_state.is_initialized() and dist_state.get_rank() != 0)
    for entry in entries(module, prefix):
        if entry.kind == "flat":
            if kind is StateDictType.LOCAL_STATE_DICT:
                out[entry.key] = local_value(entry.handle)
            continue
        if entry.handle is None:
            value = entry.tensor if keep_vars else entry.tensor.detach()
            if entry.kind == "buffer":
                original = entry.module.__dict__.get("_fsdp_buffer_dtypes", {}).get(entry.name)
                value = value if original is None else value.to(original)
            if kind is StateDictType.FULL_STATE_DICT and getattr(config, "offload_to_cpu", False):
                value = value.cpu()
        elif kind is StateDictType.FULL_STATE_DICT:
            value = gathers.value(entry)
        elif kind is StateDictType.SHARDED_STATE_DICT:
            value = sharded_value(entry)
        else:
            continue
        if keep:
            out[entry.key] = value
    return out


def load_module_state_dict(module: Module, state_dict, strict: bool = True) -> IncompatibleKeys:
    """``module.load_state_dict(sd)``: whole tensors (any type), ``ShardedTensor`` pieces matching this rank's,
    or, under LOCAL_STATE_DICT, each unit's flat shard."""
    if not hasattr(state_dict, "keys"):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
    local = settings_for(module).state_dict_type is StateDictType.LOCAL_STATE_DICT
    wanted = [e for e in entries(module) if _loads(e, local)]
    missing = [e.key for e in wanted if e.key not in state_dict]
    unexpected = [k for k in state_dict if k not in {e.key for e in wanted}]
    if strict and (missing or unexpected):
        parts = []
        if unexpected:
            parts.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            parts.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(parts))
    with no_grad():
        for entry in wanted:
            if entry.key in state_dict:
                _load_entry(entry, state_dict[entry.key])
    return IncompatibleKeys(missing, unexpected)


def _loads(entry: Entry, local: bool) -> bool:
    """Whether a state dict of this type holds ``entry``: a LOCAL one holds shards instead of managed
    parameters; both hold buffers and parameters outside the units."""
    if entry.kind == "flat":
        return local
    return entry.handle is None or not local


def _load_entry(entry: Entry, value) -> None:
    if entry.kind == "flat":
        local = value.to_local() if isinstance(value, ShardedTensor) else value
        target = entry.handle.flat_param
        _check_numel(entry.key, local.numel(), target.numel(), "this rank's shard")
        target.copy_(local.reshape(-1).to(target.device))
        return
    if entry.handle is None:
        if isinstance(value, ShardedTensor):
            value = value.full_tensor()
        _check_shape(entry.key, value, tuple(entry.tensor.shape))
        entry.tensor.copy_(value.to(entry.tensor.device))
        return
    handle, info = entry.handle, entry.info
    target = handle.shard_slice(handle.flat_param.detach(), info)
    first, end = handle.local_range(info)
    if isinstance(value, ShardedTensor):
        _check_shape(entry.key, value, info.shape)
        if value.offset != first or value.to_local().numel() != end - first:
            raise ValueError(f"load_state_dict: the piece of {entry.key!r} in the state dict holds elements "
                             f"[{value.offset}, {value.offset + value.to_local().numel()}) but this rank's shard "
                             f"holds [{first}, {end}); load sharded checkpoints with "
                             f"ember.distributed.checkpoint.load, which reshards")
        piece = value.to_local()
    else:
        if not isinstance(value, Tensor):
            raise TypeError(f'While copying the parameter named "{entry.key}", expected a Tensor, got '
                            f'{type(value).__name__}.')
        _check_shape(entry.key, value, info.shape)
        piece = value.reshape(-1)[first:end]
    target.copy_(piece.to(device=target.device, dtype=target.dtype))


def _check_shape(key: str, value, shape: tuple) -> None:
    if tuple(value.shape) != tuple(shape):
        raise RuntimeError(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                           f"checkpoint, the shape in current model is {tuple(shape)}.")


def _check_numel(key: str, got: int, expected: int, what: str) -> None:
    if got != expected:
        raise RuntimeError(f"load_state_dict: {key} has {got} elements, {what} has {expected}; LOCAL_STATE_DICT "
                           f"loads only at the world size it was saved at")
