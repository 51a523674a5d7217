"""Optimizer state dicts of FSDP models, keyed by the original parameters' names (PyTorch's form).

An optimizer steps on shards: a unit's flat shard (its state tensors are shard-sized vectors) or, with
``use_orig_params``, each original parameter's part of the shard. The FULL form gathers those vectors and
cuts them into whole per-parameter tensors; the SHARDED form gives each rank's pieces as ``ShardedTensor``s.
``to_load`` turns either form (from any world size, FULL; or resharded by ``dcp.load``, SHARDED) back into
what ``optimizer.load_state_dict`` takes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...dispatch.ops import F
from ...autograd.grad_mode import no_grad
from ...nn.modules.module import Module
from ...tensor import Tensor
from .. import state as dist_state
from ..objects import broadcast_object_list
from ..sharded_tensor import ShardedTensor
from .api import OptimStateKeyType, StateDictType
from .flat_param import FlatParamHandle
from .state_dicts import settings_for
from .walk import entries


@dataclass
class Target:
    """What one optimizer parameter is: a unit's flat shard ("flat"), one original parameter's part of a shard
    ("orig"), or a parameter outside the units ("plain"); with the names it stands for."""

    kind: str
    fqns: list[str]
    handle: FlatParamHandle | None = None
    indices: list[int] = field(default_factory=list)


def _targets(model: Module) -> dict[int, Target]:
    found: dict[int, Target] = {}
    for entry in entries(model):
        if entry.kind != "param" or entry.alias:
            continue
        if entry.handle is None:
            found[id(entry.tensor)] = Target("plain", [entry.key])
        elif entry.handle.use_orig_params:
            found[id(entry.info.param)] = Target("orig", [entry.key], entry.handle, [entry.index])
        else:
            target = found.setdefault(id(entry.handle.flat_param), Target("flat", [], entry.handle))
            target.fqns.append(entry.key)
            target.indices.append(entry.index)
    return found


def _optim_params(optim) -> list[Tensor]:
    """The optimizer's parameters in ``state_dict`` numbering."""
    seen: dict[int, Tensor] = {}
    for group in optim.param_groups:
        for p in group["params"]:
            seen.setdefault(id(p), p)
    return list(seen.values())


def _target_of(targets: dict[int, Target], param: Tensor, at: int) -> Target:
    target = targets.get(id(param))
    if target is None:
        raise ValueError(f"FSDP optimizer state: the optimizer's parameter {at} (shape {tuple(param.shape)}) is not "
                         f"a parameter of this model; build the optimizer on the FSDP model's parameters()")
    return target


# -- saving --------------------------------------------------------------------------------------------
def _keyed(model: Module, optim, full: bool, offload: bool) -> dict:
    """The optimizer's state keyed by names: whole tensors (``full``) or ShardedTensor pieces.

    Gathering is one all-gather per unit and state key: a flat shard's state vector as it is; the original
    parameters' states (``use_orig_params``) first placed together in one shard-sized vector."""
    targets = _targets(model)
    state: dict[str, dict] = {}
    originals: dict[int, tuple[FlatParamHandle, dict[str, list]]] = {}  # per unit: key -> [(fqn, index, value)]
    for at, param in enumerate(_optim_params(optim)):
        target = _target_of(targets, param, at)
        values = optim.state.get(param, {})
        if target.kind == "plain":
            if values:
                state[target.fqns[0]] = {k: _plain(v, offload and full) for k, v in values.items()}
            continue
        handle = target.handle
        for fqn in target.fqns:
            state.setdefault(fqn, {})
        for key, value in values.items():
            if not _is_vector_state(value, param):
                for fqn in target.fqns:
                    state[fqn][key] = _plain(value, False)
            elif not full:
                for fqn, index in zip(target.fqns, target.indices):
                    info = handle.infos[index]
                    piece = handle.shard_slice(value.detach(), info) if target.kind == "flat" else value.detach()
                    state[fqn][key] = ShardedTensor(piece, info.shape, handle.local_range(info)[0],
                                                    handle.groups.shard)
            elif target.kind == "flat":
                _cut(state, handle, key, list(zip(target.fqns, target.indices)), _gathered(handle, value, offload))
            else:
                unit = originals.setdefault(id(handle), (handle, {}))[1]
                unit.setdefault(key, []).append((target.fqns[0], target.indices[0], value))
    for handle, keys in originals.values():
        for key, items in keys.items():
            vector = F.zeros((handle.shard_numel,), dtype=items[0][2].dtype, device=items[0][2].device)
            with no_grad():
                for _, index, value in items:
                    handle.shard_slice(vector, handle.infos[index]).copy_(value.detach().reshape(-1))
            _cut(state, handle, key, [(fqn, index) for fqn, index, _ in items], _gathered(handle, vector, offload))
    state = {fqn: values for fqn, values in state.items() if values}
    groups = []
    for group in optim.param_groups:
        packed = {k: v for k, v in group.items() if k != "params"}
        packed["params"] = [fqn for p in group["params"] for fqn in targets[id(p)].fqns]
        groups.append(packed)
    return {"state": state, "param_groups": groups}


def _gathered(handle: FlatParamHandle, vector: Tensor, offload: bool) -> Tensor:
    whole = handle.gather_full(vector.detach())
    return whole.cpu() if offload else whole


def _cut(state: dict, handle: FlatParamHandle, key: str, places: list[tuple[str, int]], whole: Tensor) -> None:
    """Each parameter's whole state ``key`` out of a unit's gathered vector."""
    for fqn, index in places:
        info = handle.infos[index]
        state[fqn][key] = info.view_of(whole).clone()


def _is_vector_state(value, param: Tensor) -> bool:
    """Per-element optimizer state (exp_avg, momentum_buffer...): a tensor shaped like the parameter."""
    return isinstance(value, Tensor) and value.dim() > 0 and tuple(value.shape) == tuple(param.shape)


def _plain(value, offload: bool):
    if isinstance(value, Tensor):
        value = value.detach().clone()
        return value.cpu() if offload else value
    return value


def full_optim_state_dict(model: Module, optim, rank0_only: bool = True, offload: bool = True) -> dict:
    out = _keyed(model, optim, full=True, offload=offload)
    if rank0_only and dist_state.is_initialized() and dist_state.get_rank() != 0:
        return {}
    return out


def sharded_optim_state_dict(model: Module, optim) -> dict:
    return _keyed(model, optim, full=False, offload=False)


def optim_state_dict(model: Module, optim, optim_state_dict: dict | None = None) -> dict:
    """``FSDP.optim_state_dict``: the form set by ``FSDP.state_dict_type`` (FULL by default)."""
    settings = settings_for(model)
    config = settings.optim_state_dict_config
    kind = settings.state_dict_type
    if kind is StateDictType.SHARDED_STATE_DICT:
        return sharded_optim_state_dict(model, optim)
    if kind is StateDictType.LOCAL_STATE_DICT:
        return optim.state_dict()
    return full_optim_state_dict(model, optim, getattr(config, "rank0_only", False),
                                 getattr(config, "offload_to_cpu", True))


# -- loading -------------------------------------------------------------------------------------------
def to_load(model: Module, optim, optim_state_dict: dict) -> dict:
    """A name-keyed optimizer state dict (FULL or SHARDED) as ``optim.load_state_dict`` takes it."""
    if settings_for(model).state_dict_type is StateDictType.LOCAL_STATE_DICT and \
            all(isinstance(k, int) for k in optim_state_dict.get("state", {})):
        return optim_state_dict
    _check_form(optim_state_dict)
    targets = _targets(model)
    saved = optim_state_dict["state"]
    state: dict[int, dict] = {}
    for at, param in enumerate(_optim_params(optim)):
        target = _target_of(targets, param, at)
        present = [fqn for fqn in target.fqns if fqn in saved]
        if not present:
            continue
        if target.kind == "plain":
            state[at] = {k: v.full_tensor() if isinstance(v, ShardedTensor) else v
                         for k, v in saved[target.fqns[0]].items()}
            continue
        values: dict = {}
        for key, first_value in saved[present[0]].items():
            if _is_whole_state(first_value, target.handle.infos[target.indices[0]].shape):
                values[key] = _local_vector(target, saved, key)
            else:
                values[key] = first_value
        state[at] = values
    groups = _groups_to_load(optim, optim_state_dict["param_groups"], targets)
    return {"state": state, "param_groups": groups}


def _check_form(osd) -> None:
    if not isinstance(osd, dict) or "state" not in osd or "param_groups" not in osd:
        raise ValueError("FSDP optimizer state: expected a dict with 'state' and 'param_groups' (from "
                         "FSDP.optim_state_dict or FSDP.full_optim_state_dict)")
    wrong = [k for k in osd["state"] if not isinstance(k, str)]
    if wrong:
        raise ValueError(f"FSDP optimizer state: the state is keyed by {type(wrong[0]).__name__} ({wrong[0]!r}), "
                         f"not by parameter names; rekey it with FSDP.rekey_optim_state_dict(..., "
                         f"OptimStateKeyType.PARAM_NAME, model)")


def _is_whole_state(value, shape: tuple) -> bool:
    if isinstance(value, ShardedTensor):
        return True
    return isinstance(value, Tensor) and value.dim() > 0 and tuple(value.shape) == tuple(shape)


def _local_vector(target: Target, saved: dict, key: str) -> Tensor:
    """This rank's part of state ``key``: the shard-sized vector (flat), or the parameter's 1-d part (orig)."""
    handle = target.handle
    pieces = []
    for fqn, index in zip(target.fqns, target.indices):
        info = handle.infos[index]
        value = saved.get(fqn, {}).get(key)
        first, end = handle.local_range(info)
        if value is None:
            raise KeyError(f"FSDP optimizer state: {fqn!r} has no {key!r}, but other parameters of its unit do")
        if isinstance(value, ShardedTensor):
            if value.offset != first or value.to_local().numel() != end - first:
                raise ValueError(f"FSDP optimizer state: the piece of {fqn}.{key} holds elements [{value.offset}, "
                                 f"{value.offset + value.to_local().numel()}) but this rank's shard holds "
                                 f"[{first}, {end}); load sharded checkpoints with ember.distributed.checkpoint")
            piece = value.to_local()
        else:
            if tuple(value.shape) != tuple(info.shape):
                raise ValueError(f"FSDP optimizer state: {fqn}.{key} has shape {tuple(value.shape)}, the "
                                 f"parameter has {tuple(info.shape)}")
            piece = value.reshape(-1)[first:end]
        pieces.append((info, piece))
    if target.kind == "orig":
        return pieces[0][1].to(handle.flat_param.device).clone()
    dtype = pieces[0][1].dtype
    out = F.zeros((handle.shard_numel,), dtype=dtype, device=handle.flat_param.device)
    with no_grad():
        for info, piece in pieces:
            handle.shard_slice(out, info).copy_(piece.to(out.device))
    return out


def _groups_to_load(optim, saved_groups: list, targets: dict[int, Target]) -> list:
    if len(saved_groups) != len(optim.param_groups):
        raise ValueError(f"FSDP optimizer state: {len(saved_groups)} parameter groups saved, the optimizer has "
                         f"{len(optim.param_groups)}")
    index = {id(p): i for i, p in enumerate(_optim_params(optim))}
    groups = []
    for group, saved in zip(optim.param_groups, saved_groups):
        names = [fqn for p in group["params"] for fqn in targets[id(p)].fqns]
        if set(saved.get("params", names)) != set(names):
            raise ValueError(f"FSDP optimizer state: a saved parameter group holds {saved.get('params')}, the "
                             f"optimizer's holds {names}")
        packed = {k: v for k, v in saved.items() if k != "params"}
        packed["params"] = [index[id(p)] for p in group["params"]]
        groups.append(packed)
    return groups


def scatter_full(full_osd: dict | None, model: Module, optim) -> dict:
    """Rank 0's full optimizer state dict, given to every rank and made loadable there."""
    if optim is None:
        raise ValueError("scatter_full_optim_state_dict: Ember needs optim= (the optimizer to load into)")
    box = [full_osd if dist_state.get_rank() == 0 else None]
    broadcast_object_list(box, src=0)
    return to_load(model, optim, box[0])


def rekey(osd: dict, key_type: OptimStateKeyType, model: Module, optim=None) -> dict:
    """Key ``osd``'s state by parameter names or by position in the unwrapped model's ``parameters()``."""
    names = [e.key for e in entries(model) if e.kind == "param" and not e.alias]
    if key_type is OptimStateKeyType.PARAM_ID:
        mapping = {name: i for i, name in enumerate(names)}
    else:
        mapping = dict(enumerate(names))
    convert = (lambda key: mapping.get(key, key))
    return {"state": {convert(k): v for k, v in osd["state"].items()},
            "param_groups": [{**g, "params": [convert(p) for p in g["params"]]} for g in osd["param_groups"]]}
