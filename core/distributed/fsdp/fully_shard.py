"""``fully_shard`` (PyTorch's FSDP2): shard a module in place, on the same units as ``FullyShardedDataParallel``.

The module keeps its class (a subclass ``FSDP<Class>`` adds ``FSDPModule``'s methods) and its original
``nn.Parameter`` objects, each becoming its 1-d part of the unit's shard (where PyTorch's would be a DTensor
of the whole shape), so an optimizer is built on ``module.parameters()`` after sharding, as in PyTorch.
``state_dict()`` gives ``ShardedTensor`` pieces (PyTorch: DTensors); whole tensors come from
``ember.distributed.checkpoint.state_dict.get_model_state_dict(..., options=StateDictOptions(
full_state_dict=True))``.
"""
from __future__ import annotations

import functools
from typing import Any

from ...nn.modules.module import Module
from .api import (CPUOffload, CPUOffloadPolicy, MixedPrecision, MixedPrecisionPolicy, OffloadPolicy,
                  ShardedOptimStateDictConfig, ShardedStateDictConfig, ShardingStrategy, StateDictSettings,
                  StateDictType)
from .construction import build_unit, is_unit, resolve_groups, unit_params
from .runtime import UnitState
from .state_dicts import load_module_state_dict, module_state_dict

_classes: dict[type, type] = {}


class UnshardHandle:
    """What ``unshard(async_op=True)`` returns: ``wait()`` finishes the gather."""

    def __init__(self, module: "FSDPModule | None" = None) -> None:
        self._module = module

    def wait(self) -> None:
        unit = None if self._module is None else self._module._fsdp_state
        if unit is not None and unit.handle is not None:
            unit.handle.unshard()


class FSDPModule:
    """The methods ``fully_shard`` adds to a module."""

    def forward(self, *args, **kwargs) -> Any:
        unit: UnitState = self.__dict__["_fsdp_state"]
        return unit.run_forward(super().forward, args, kwargs)

    def reshard(self) -> None:
        """Free the gathered parameters (they are gathered again when needed)."""
        unit: UnitState = self._fsdp_state
        if unit.handle is not None:
            unit.handle.reshard()

    def unshard(self, async_op: bool = False) -> UnshardHandle | None:
        """Gather the parameters now (``async_op``: start, and finish at ``wait()`` or at first use)."""
        unit: UnitState = self._fsdp_state
        if unit.handle is not None:
            unit.handle.start_unshard()
        handle = UnshardHandle(self)
        if async_op:
            return handle
        handle.wait()
        return None

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        """False: backward keeps unsharded gradients locally (gradient accumulation), as ``no_sync``."""
        unit: UnitState = self._fsdp_state
        unit._lazy_init()
        unit.tree.sync_grads = bool(requires_gradient_sync)

    def set_reshard_after_backward(self, reshard_after_backward: bool, *, recurse: bool = True) -> None:
        for module in (self.modules() if recurse else [self]):
            if is_unit(module):
                module._fsdp_state.config.reshard_after_backward = bool(reshard_after_backward)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        return module_state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return load_module_state_dict(self, state_dict, strict)


def fully_shard(module: Module, *, mesh=None, reshard_after_forward: bool | None = None, shard_placement_fn=None,
                mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy: OffloadPolicy = OffloadPolicy(), ignored_params: set | None = None,
                dp_mesh_dims=None) -> Module:
    """Shard ``module``'s parameters that no ``fully_shard``-ed submodule already holds; returns ``module``.
    ``reshard_after_forward`` (None: True) frees the gathered parameters after forward; the root module keeps
    them for its backward, which comes first, as in PyTorch."""
    if shard_placement_fn is not None or dp_mesh_dims is not None:
        raise ValueError("fully_shard: shard_placement_fn and dp_mesh_dims are not supported: Ember shards each "
                         "unit's flattened parameters along their concatenation, over mesh")
    if reshard_after_forward is not None and not isinstance(reshard_after_forward, bool):
        raise ValueError(f"fully_shard: reshard_after_forward={reshard_after_forward!r}: resharding to a smaller "
                         f"world size is not supported; pass True or False")
    if not isinstance(module, Module):
        raise TypeError(f"fully_shard: expected an nn.Module, got {type(module).__name__}")
    if is_unit(module):
        raise ValueError(f"fully_shard: {type(module).__name__} is already sharded")
    mp = mp_policy or MixedPrecisionPolicy()
    strategy = ShardingStrategy.HYBRID_SHARD if mesh is not None and mesh.ndim == 2 else ShardingStrategy.FULL_SHARD
    groups = resolve_groups(strategy, None, mesh)
    ignored = {id(p) for p in ignored_params or ()}
    precision = MixedPrecision(param_dtype=mp.param_dtype, reduce_dtype=mp.reduce_dtype,
                               cast_forward_inputs=mp.cast_forward_inputs)
    offload = CPUOffload(offload_params=isinstance(offload_policy, CPUOffloadPolicy))
    unit = build_unit(module, unit_params(module, ignored), groups, strategy, precision, offload, None, True, False,
                      {})
    unit.config.reshard_after_forward = reshard_after_forward is not False
    unit.state_dict_settings = StateDictSettings(StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig(),
                                                 ShardedOptimStateDictConfig())
    object.__setattr__(module, "_fsdp_state", unit)
    cls = type(module)
    sharded_cls = _classes.get(cls)
    if sharded_cls is None:
        sharded_cls = _classes[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    module.__class__ = sharded_cls
    return module


def register_fsdp_forward_method(module: Module, method_name: str) -> None:
    """Make ``module.<method_name>`` (``generate``, say) gather and free the parameters as ``forward`` does."""
    if not is_unit(module):
        raise ValueError(f"register_fsdp_forward_method: {type(module).__name__} has not been fully_shard-ed")
    method = getattr(module, method_name)
    unit: UnitState = module._fsdp_state

    @functools.wraps(method)
    def sharded(*args, **kwargs):
        return unit.run_forward(method, args, kwargs)
    object.__setattr__(module, method_name, sharded)
