"""``FullyShardedDataParallel``: PyTorch's FSDP wrapper, on the units of ``runtime`` and ``flat_param``.

Each wrapped module (the root, and every module the ``auto_wrap_policy`` picks) is one unit whose parameters
are flattened and sharded across ranks; see ``runtime`` for what happens around forward and backward,
``state_dicts`` and ``optim_state`` for checkpoints.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from ...nn.modules.module import Module
from ...nn.utils.clip_grad import clip_grad_norm_
from . import optim_state, state_dicts, summon
from .api import (BackwardPrefetch, CPUOffload, MixedPrecision, OptimStateKeyType, ShardingStrategy,
                  StateDictConfig, StateDictSettings, StateDictType)
from .construction import build_unit, is_unit, resolve_groups, unit_params
from .runtime import UnitState

WRAPPED = "_fsdp_wrapped_module"
_PREFIX = WRAPPED + "."


class FullyShardedDataParallel(Module):
    """Shards ``module``'s parameters, gradients and optimizer state across the ranks of ``process_group``."""

    def __init__(self, module: Module, process_group=None, sharding_strategy: ShardingStrategy | None = None,
                 cpu_offload: CPUOffload | None = None, auto_wrap_policy: Callable | None = None,
                 backward_prefetch: BackwardPrefetch | None = BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision: MixedPrecision | None = None, ignored_modules: Iterable[Module] | None = None,
                 param_init_fn: Callable | None = None, device_id=None, sync_module_states: bool = False,
                 forward_prefetch: bool = False, limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states: Iterable | None = None, device_mesh=None) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel: expected an nn.Module, got {type(module).__name__}")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        groups = resolve_groups(strategy, process_group, device_mesh)
        ignored = _ignored_params(module, ignored_modules, ignored_states)
        if param_init_fn is not None:
            param_init_fn(module)
        settings = dict(sharding_strategy=strategy, cpu_offload=cpu_offload, backward_prefetch=backward_prefetch,
                        mixed_precision=mixed_precision, device_id=device_id, sync_module_states=sync_module_states,
                        forward_prefetch=forward_prefetch, limit_all_gathers=limit_all_gathers,
                        use_orig_params=use_orig_params, ignored_states=[_ParamSet(ignored)])
        if auto_wrap_policy is not None:
            _auto_wrap(module, auto_wrap_policy, ignored, groups, settings)
        prefetch = dict(forward_prefetch=forward_prefetch, backward_prefetch=backward_prefetch,
                        limit_all_gathers=limit_all_gathers)
        unit = build_unit(module, unit_params(module, ignored), groups, strategy, mixed_precision, cpu_offload,
                          device_id, use_orig_params, sync_module_states, prefetch)
        self._fsdp_wrapped_module = module
        if unit.handle is not None and not use_orig_params:
            module._parameters["_flat_param"] = unit.handle.flat_param
            unit.handle.registered_on = module
        object.__setattr__(self, "_fsdp_state", unit)
        object.__setattr__(self, "sharding_strategy", strategy)
        object.__setattr__(self, "mixed_precision", mixed_precision)
        object.__setattr__(self, "cpu_offload", cpu_offload or CPUOffload())
        object.__setattr__(self, "_use_orig_params", use_orig_params)

    # -- the wrapped module ----------------------------------------------------------------------------
    @property
    def module(self) -> Module:
        return self._fsdp_wrapped_module

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == WRAPPED:
                raise
            return getattr(self._fsdp_wrapped_module, name)  # as PyTorch: the wrapped module's attributes

    def __getitem__(self, key):
        return self._fsdp_wrapped_module.__getitem__(key)

    def forward(self, *args, **kwargs) -> Any:
        unit: UnitState = self._fsdp_state
        return unit.run_forward(self._fsdp_wrapped_module, args, kwargs)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Names without the wrapper's ``_fsdp_wrapped_module.`` parts, as PyTorch gives them."""
        for name, param in super().named_parameters(prefix, recurse, remove_duplicate):
            yield name.replace(_PREFIX, ""), param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        for name, buffer in super().named_buffers(prefix, recurse, remove_duplicate):
            yield name.replace(_PREFIX, ""), buffer

    def check_is_root(self) -> bool:
        _tree_of(self)
        return self._fsdp_state.is_root

    @staticmethod
    def fsdp_modules(module: Module, root_only: bool = False) -> list["FullyShardedDataParallel"]:
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if root_only:
            inner = {id(n) for u in units for n in u.module.modules() if n is not u}
            units = [u for u in units if id(u) not in inner]
        return units

    # -- gradients -------------------------------------------------------------------------------------
    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside keep unsharded gradients locally; the first one after reduces their sum."""
        tree = _tree_of(self)
        previous = tree.sync_grads
        tree.sync_grads = False
        try:
            yield
        finally:
            tree.sync_grads = previous

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0):
        """Clip the gradients of every shard by their norm over the whole model; returns that norm (the same on
        every rank). ``nn.utils.clip_grad_norm_`` knows the shards, so this is that, on this module's parameters."""
        return clip_grad_norm_(list(self.parameters()), max_norm, norm_type)

    @staticmethod
    @contextmanager
    def summon_full_params(module: Module, recurse: bool = True, writeback: bool = True, rank0_only: bool = False,
                           offload_to_cpu: bool = False, with_grads: bool = False) -> Iterator[None]:
        """Inside: the original parameters, whole, as ``nn.Parameter``s of their modules."""
        with summon.full_params(module, recurse, writeback, rank0_only, offload_to_cpu, with_grads):
            yield

    # -- state dicts -----------------------------------------------------------------------------------
    @staticmethod
    @contextmanager
    def state_dict_type(module: Module, state_dict_type: StateDictType,
                        state_dict_config: StateDictConfig | None = None,
                        optim_state_dict_config=None) -> Iterator[StateDictSettings]:
        previous = FullyShardedDataParallel.set_state_dict_type(module, state_dict_type, state_dict_config,
                                                                optim_state_dict_config)
        try:
            yield previous
        finally:
            FullyShardedDataParallel.set_state_dict_type(module, previous.state_dict_type,
                                                         previous.state_dict_config,
                                                         previous.optim_state_dict_config)

    @staticmethod
    def set_state_dict_type(module: Module, state_dict_type: StateDictType,
                            state_dict_config: StateDictConfig | None = None,
                            optim_state_dict_config=None) -> StateDictSettings:
        return state_dicts.set_type(_units(module), state_dict_type, state_dict_config, optim_state_dict_config)

    @staticmethod
    def get_state_dict_type(module: Module) -> StateDictSettings:
        return state_dicts.settings_of(_units(module))

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        return state_dicts.module_state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return state_dicts.load_module_state_dict(self, state_dict, strict)

    @staticmethod
    def optim_state_dict(model: Module, optim, optim_state_dict: dict | None = None, group=None) -> dict:
        return optim_state.optim_state_dict(model, optim, optim_state_dict)

    @staticmethod
    def optim_state_dict_to_load(model: Module, optim, optim_state_dict: dict, is_named_optimizer: bool = False,
                                 load_directly: bool = False, group=None) -> dict:
        loadable = optim_state.to_load(model, optim, optim_state_dict)
        if load_directly:
            optim.load_state_dict(loadable)
        return loadable

    @staticmethod
    def full_optim_state_dict(model: Module, optim, optim_input=None, rank0_only: bool = True, group=None) -> dict:
        return optim_state.full_optim_state_dict(model, optim, rank0_only)

    @staticmethod
    def sharded_optim_state_dict(model: Module, optim, group=None) -> dict:
        return optim_state.sharded_optim_state_dict(model, optim)

    @staticmethod
    def shard_full_optim_state_dict(full_optim_state_dict: dict, model: Module, optim_input=None,
                                    optim=None) -> dict:
        if optim is None:
            raise ValueError("shard_full_optim_state_dict: Ember needs optim= (the optimizer to load into) to "
                             "number the parameters as it does")
        return optim_state.to_load(model, optim, full_optim_state_dict)

    @staticmethod
    def scatter_full_optim_state_dict(full_optim_state_dict: dict | None, model: Module, optim_input=None,
                                      optim=None, group=None) -> dict:
        return optim_state.scatter_full(full_optim_state_dict, model, optim)

    @staticmethod
    def rekey_optim_state_dict(optim_state_dict: dict, optim_state_key_type: OptimStateKeyType, model: Module,
                               optim_input=None, optim=None) -> dict:
        return optim_state.rekey(optim_state_dict, optim_state_key_type, model, optim)


FSDP = FullyShardedDataParallel


class _ParamSet:
    """Parameters already resolved to ignore, passed on to nested wrappers."""

    def __init__(self, ids: set[int]) -> None:
        self.ids = ids


def _ignored_params(module: Module, ignored_modules, ignored_states) -> set[int]:
    ids: set[int] = set()
    for m in ignored_modules or ():
        if not isinstance(m, Module):
            raise TypeError(f"FSDP: ignored_modules must hold nn.Modules, got {type(m).__name__}")
        ids.update(id(p) for p in m.parameters())
    for item in ignored_states or ():
        if isinstance(item, _ParamSet):
            ids.update(item.ids)
        elif isinstance(item, Module):
            ids.update(id(p) for p in item.parameters())
        else:
            ids.add(id(item))
    return ids


def _auto_wrap(root: Module, policy, ignored: set[int], groups, settings: dict) -> None:
    """Wrap the modules ``policy`` picks (children first) in their own FSDP, in place in their parents."""
    from .wrap import plan_wrapping
    parents = {id(child): (parent, name) for parent in root.modules() for name, child in parent._modules.items()
               if child is not None}
    for child, overrides in plan_wrapping(root, policy, ignored):
        if isinstance(child, FullyShardedDataParallel) or is_unit(child):
            continue
        parent, name = parents[id(child)]
        wrapped = FullyShardedDataParallel(child, process_group=groups, **{**settings, **overrides})
        parent._modules[name] = wrapped


def _units(module: Module) -> list[UnitState]:
    return [m.__dict__["_fsdp_state"] for m in module.modules() if is_unit(m)]


def _tree_of(module: Module):
    unit: UnitState = module._fsdp_state
    unit._lazy_init()
    return unit.tree
