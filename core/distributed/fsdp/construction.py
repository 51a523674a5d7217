"""Building a unit: which parameters it owns, which ranks it shards over, and its handle."""
from __future__ import annotations

import os

from ...autograd.grad_mode import no_grad
from ...dispatch.schema.device import device as as_device
from ...nn.modules.module import Module
from .. import state as dist_state
from ..collectives import broadcast
from .api import CPUOffload, MixedPrecision, ShardingStrategy
from .flat_param import FlatParamHandle, ParamInfo, ShardGroups
from .runtime import UnitConfig, UnitState

_REPLICATED = (ShardingStrategy.NO_SHARD,)
_HYBRID = (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2)


def is_unit(module) -> bool:
    return isinstance(module.__dict__.get("_fsdp_state"), UnitState)


def resolve_groups(strategy: ShardingStrategy, process_group, device_mesh) -> ShardGroups:
    """The shard and replicate groups of ``strategy``: the whole group (or 1-d mesh) for FULL_SHARD and
    SHARD_GRAD_OP; replicas everywhere for NO_SHARD; for the hybrid strategies a (shard, replicate) pair of
    groups, a 2-d mesh (replicate, shard), or by default one shard group per node (LOCAL_WORLD_SIZE)."""
    if isinstance(process_group, ShardGroups):
        return process_group
    if not dist_state.is_initialized():
        raise ValueError("FullyShardedDataParallel: the default process group has not been initialized; call "
                         "ember.distributed.init_process_group(...) first")
    if strategy in _HYBRID:
        shard, replicate = _hybrid_groups(process_group, device_mesh)
    else:
        group = process_group
        if device_mesh is not None:
            if device_mesh.ndim != 1:
                raise ValueError(f"FSDP: {strategy.name} takes a 1-d device_mesh, got {device_mesh.ndim} dims; "
                                 f"use HYBRID_SHARD with a 2-d mesh")
            group = device_mesh.get_group()
        group = dist_state.resolve(group, "FullyShardedDataParallel")
        shard, replicate = (None, group) if strategy in _REPLICATED else (group, None)
    # a shard group of one rank still gathers and reduces through its engine (a world of one checks the
    # NCCL path on one GPU); a replica group of one has nothing to do
    return ShardGroups(shard, replicate if replicate is not None and replicate.size() > 1 else None)


def _hybrid_groups(process_group, device_mesh):
    if device_mesh is not None:
        if device_mesh.ndim != 2:
            raise ValueError(f"FSDP: HYBRID_SHARD takes a 2-d device_mesh (replicate, shard), got {device_mesh.ndim}")
        return device_mesh.get_group(1), device_mesh.get_group(0)
    if isinstance(process_group, tuple):
        if len(process_group) != 2:
            raise ValueError("FSDP: HYBRID_SHARD takes process_group=(shard_group, replicate_group)")
        return process_group
    if process_group is not None:
        raise ValueError("FSDP: HYBRID_SHARD takes process_group=(shard_group, replicate_group) or a 2-d "
                         "device_mesh, not one group")
    world = dist_state.get_world_size()
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if per_node <= 0 or world % per_node:
        raise ValueError(f"FSDP: HYBRID_SHARD needs the world ({world} ranks) to be whole nodes of "
                         f"LOCAL_WORLD_SIZE={per_node} ranks")
    rank = dist_state.get_rank()
    shard = replicate = None
    for node in range(world // per_node):  # every rank makes every group, in the same order
        group = dist_state.new_group(list(range(node * per_node, (node + 1) * per_node)))
        if rank // per_node == node:
            shard = group
    for local in range(per_node):
        group = dist_state.new_group(list(range(local, world, per_node)))
        if rank % per_node == local:
            replicate = group
    return shard, replicate


def unit_params(module: Module, ignored: set[int]) -> list[tuple]:
    """(module, attribute, name relative to ``module``, parameter, aliases) of every parameter ``module`` owns:
    not in a nested unit, not ignored. A parameter shared by several attributes (tied weights) is listed once,
    its other (module, attribute) places in ``aliases``."""
    found, first = [], {}

    def visit(m: Module, prefix: str) -> None:
        for name, param in m._parameters.items():
            if param is None or id(param) in ignored or name == "_flat_param":
                continue
            if id(param) in first:
                first[id(param)][4].append((m, name))
                continue
            first[id(param)] = entry = (m, name, prefix + name, param, [])
            found.append(entry)
        for name, child in m._modules.items():
            if child is not None and not is_unit(child):
                visit(child, f"{prefix}{name}.")
    visit(module, "")
    return found


def build_unit(module: Module, params: list, groups: ShardGroups, strategy: ShardingStrategy,
               mixed_precision: MixedPrecision | None, cpu_offload: CPUOffload | None, device_id,
               use_orig_params: bool, sync_module_states: bool, prefetch: dict) -> UnitState:
    """The unit for ``module`` and its ``params`` (from ``unit_params``), with its handle."""
    home = _compute_device(module, params, device_id)
    if sync_module_states:
        _broadcast_states(module, [entry[3] for entry in params])
    mp = mixed_precision or MixedPrecision()
    handle = None
    if params:
        infos, start = [], 0
        for owner, name, fqn, param, aliases in params:
            infos.append(ParamInfo(owner, name, fqn, tuple(param.shape), param.numel(), start, param, aliases))
            start += param.numel()
        handle = FlatParamHandle(infos, groups, home, mp.param_dtype, mp.reduce_dtype,
                                 bool(cpu_offload and cpu_offload.offload_params), use_orig_params)
        _record_slots(infos, handle, use_orig_params)
    if mixed_precision is not None and mixed_precision.buffer_dtype is not None:
        _cast_buffers(module, mixed_precision.buffer_dtype)
    config = UnitConfig(reshard_after_forward=strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD),
                        reshard_after_backward=strategy not in _REPLICATED,
                        param_dtype=mp.param_dtype, cast_root_inputs=mp.cast_root_forward_inputs,
                        cast_inputs=mp.cast_forward_inputs, **prefetch)
    return UnitState(module, handle, config)


def _record_slots(infos: list[ParamInfo], handle: FlatParamHandle, use_orig_params: bool) -> None:
    """Remember, on each module, its parameters' original order and which of them the handle manages: state
    dicts list them in PyTorch's order. Without ``use_orig_params`` the originals leave ``_parameters``."""
    for i, info in enumerate(infos):
        for module, name in info.places():
            if "_fsdp_order" not in module.__dict__:
                object.__setattr__(module, "_fsdp_order", list(module._parameters))
                object.__setattr__(module, "_fsdp_managed", {})
            module._fsdp_managed[name] = (handle, i)
            if not use_orig_params:
                module._parameters.pop(name, None)
    handle.uninstall_views()


def _compute_device(module: Module, params: list, device_id):
    if device_id is not None:
        target = as_device(device_id) if not isinstance(device_id, int) else as_device("cuda", device_id)
        module.to(target)
        return target
    devices = {entry[3].device for entry in params} | {b.device for b in module.buffers()}
    if len(devices) > 1:
        raise ValueError(f"FSDP: a unit's parameters and buffers must be on one device, got "
                         f"{sorted(str(d) for d in devices)}; pass device_id= to move the module")
    return devices.pop() if devices else as_device("cpu")


def _broadcast_states(module: Module, params: list) -> None:
    """``sync_module_states``: rank 0's values of the unit's parameters and buffers on every rank."""
    with no_grad():
        for tensor in params + [b for b in module.buffers()]:
            broadcast(tensor.detach(), src=0)


def _cast_buffers(module: Module, dtype) -> None:
    for m in module.modules():
        if is_unit(m) and m is not module:
            continue
        for name, buffer in m._buffers.items():
            if buffer is not None and buffer.dtype.is_floating_point and buffer.dtype != dtype:
                m.__dict__.setdefault("_fsdp_buffer_dtypes", {})[name] = buffer.dtype
                m._buffers[name] = buffer.to(dtype)
