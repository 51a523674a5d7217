"""A custom op's batching rule, from PyTorch's ``register_vmap(func)``.

Ember's ops carry their vmap rule in the schema (``OpDef.batch``): a function given the call at one vmap level
(``ember.func.vmap_mode.VmapCall``). ``batch_rule`` writes one around the user's ``func(info, in_dims, *args,
**kwargs) -> (output, out_dims)``: the arguments are the physical tensors with their batch dim first, ``in_dims``
says per argument whether it is batched (0) or not (None; a list for a list of tensors), and ``info`` holds
``batch_size`` and ``randomness``. The user's function calls the op (or any ops) on whole batches, below the
level; each output is brought back to this level's batch along its ``out_dims`` entry (None: the same for every
element). A custom op without a rule runs once per batch element, with a warning (vmap's loop fallback).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..dispatch.ops import F
from ..dispatch.schema.errors import EmberError
from ..tensor import Tensor


@dataclass(frozen=True)
class VmapInfo:
    """What a vmap rule may need besides the arguments (PyTorch's ``info``)."""
    batch_size: int
    randomness: str


def batch_rule(qualname: str, func: Callable) -> Callable:
    """``OpDef.batch`` for custom op ``qualname`` from the user's vmap function ``func``."""
    def batch(call):
        op = call.op
        positional = [(p, v) for p, v in zip(op.params, call.values) if not p.kw_only]
        keywords = {p.name: _physical(call, v) for p, v in zip(op.params, call.values) if p.kw_only}
        in_dims = tuple(_dim(call, v) for _, v in positional)
        info = VmapInfo(call.size, call.mode.randomness)
        result = func(info, in_dims, *(_physical(call, v) for _, v in positional), **keywords)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise EmberError(f"{qualname}: its vmap rule (register_vmap) must return (output, out_dims), got "
                             f"{type(result).__name__}")
        output, out_dims = result
        return _at_level(qualname, call, output, out_dims)
    return batch


def _dim(call, value):
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return [0 if call.is_batched(v) else None for v in value]
    return 0 if call.is_batched(value) else None


def _physical(call, value):
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(call.physical(v) for v in value)
    return call.physical(value)


def _at_level(qualname: str, call, output, out_dims):
    """``output`` (tensors, or tuples and lists of them) as batched at the call's level, each along its dim."""
    if isinstance(output, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(output)
        if len(dims) != len(output):
            raise EmberError(f"{qualname}: its vmap rule returned {len(output)} outputs but {len(dims)} out_dims")
        return type(output)(_at_level(qualname, call, o, d) for o, d in zip(output, dims))
    if not isinstance(output, Tensor):
        raise EmberError(f"{qualname}: its vmap rule returned {type(output).__name__}, not a tensor")
    if out_dims is None:
        output = F.expand(F.unsqueeze(output, 0), (call.size, *output.shape))
    else:
        if not isinstance(out_dims, int) or not -output.dim() <= out_dims < output.dim():
            raise EmberError(f"{qualname}: its vmap rule gave out_dims {out_dims!r} for an output of shape "
                             f"{tuple(output.shape)}")
        if out_dims % output.dim() != 0:
            output = F.movedim(output, out_dims, 0)
        if output.shape[0] != call.size:
            raise EmberError(f"{qualname}: its vmap rule returned an output whose dim {out_dims} has size "
                             f"{output.shape[0]}, not the batch size {call.size}")
    return call.wrap(output)


__all__ = ["VmapInfo", "batch_rule"]
