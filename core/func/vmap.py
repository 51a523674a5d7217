"""``ember.func.vmap``: a function of one element, run on a whole batch at once (``torch.func.vmap``)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..dispatch.ops import F
from ..tensor import Tensor
from . import levels
from .batched import batched, is_batched_at
from .pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .vmap_mode import RANDOMNESS, VmapLevel, _at_level


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` mapped over a dimension of its inputs: ``vmap(f)(x)[i] == f(x[i])``, computed by batched ops.

    ``in_dims``: the mapped dim of each input (an int, None for an input passed whole, or a tree matching the
    positional arguments); keyword arguments are passed whole. ``out_dims``: where the batch dim goes in each
    output. ``randomness``: "error" (random ops are refused), "different" (each element draws its own) or
    "same" (one draw for all). ``chunk_size``: at most that many elements at a time (less memory, more calls).
    """
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if not callable(func):
        raise TypeError(f"vmap(func): func must be callable, got {type(func).__name__}")

    @functools.wraps(func)
    def mapped(*args, **kwargs):
        leaves, spec = tree_flatten(args)
        dims = _input_dims(in_dims, args, leaves)
        size = _batch_size(leaves, dims)
        if chunk_size is None or chunk_size >= size:
            return _run(func, leaves, spec, dims, size, kwargs, out_dims, randomness)
        chunks = []
        for start in range(0, size, chunk_size):
            width = min(chunk_size, size - start)
            part = [F.narrow(x, d, start, width) if d is not None else x for x, d in zip(leaves, dims)]
            chunks.append(_run(func, part, spec, dims, width, kwargs, out_dims, randomness))
        return _joined(chunks, out_dims)
    return mapped


def _input_dims(in_dims, args: tuple, leaves: list) -> list:
    if not isinstance(in_dims, (int, tuple, list, dict)) and in_dims is not None:
        raise ValueError(f"vmap: in_dims must be an int, None or a tuple matching the inputs, got "
                         f"{type(in_dims).__name__}")
    if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={tuple(in_dims)}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {len(in_dims)} items but inputs has "
                         f"structure {len(args)} items.")
    dims = broadcast_prefix(in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
                            if in_dims is None or isinstance(in_dims, int) else in_dims, args)
    out = []
    for x, d in zip(leaves, dims):
        if d is None:
            out.append(None)
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap: in_dims entries must be int or None, got {type(d).__name__}")
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of type {type(x).__name__}. We "
                             f"cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
            raise ValueError(f"vmap: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
        out.append(d % x.dim())
    if all(d is None for d in out):
        raise ValueError("vmap: at least one input must be mapped over (got in_dims that are all None)")
    return out


def _batch_size(leaves: list, dims: list) -> int:
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if len(set(sizes)) != 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _run(func, leaves, spec, dims, size, kwargs, out_dims, randomness):
    with levels.entered(lambda level: VmapLevel(level, size, randomness)) as mode:
        inputs = [batched(F.movedim(x, d, 0), mode.level) if d is not None else x for x, d in zip(leaves, dims)]
        result = func(*tree_unflatten(inputs, spec), **kwargs)
    return _unbatched(result, out_dims, mode.level, size)


def _unbatched(result, out_dims, level: int, size: int):
    """The function's outputs as whole batches, the batch dim at ``out_dims``."""
    outs, spec = tree_flatten(result)
    dims = broadcast_prefix(out_dims, result, "out_dims")
    done = []
    for out, d in zip(outs, dims):
        if not isinstance(out, Tensor):
            if d is None:
                done.append(out)
                continue
            raise ValueError(f"vmap: `func` must only return Tensors, got type {type(out)}. Did you mean to set "
                             f"out_dims= to None for output?")
        if d is None:
            if is_batched_at(out, level):
                raise ValueError("vmap: out_dims=None for an output that varies over the batch (it is batched); "
                                 "only outputs that are the same for every element can have out_dims=None")
            done.append(out)
            continue
        if is_batched_at(out, level):
            physical = _at_level(out, level)._value
        else:
            physical = F.expand(F.unsqueeze(out, 0), (size, *out.shape))
        rank = physical.dim()
        if not -rank <= d < rank:
            raise ValueError(f"vmap: out_dims={d} is out of range for an output of {rank - 1} dims")
        done.append(F.movedim(physical, 0, d % rank) if d % rank else physical)
    return tree_unflatten(done, spec)


def _joined(chunks: list, out_dims):
    """Chunked results, joined along each output's batch dim."""
    flat = [tree_flatten(c) for c in chunks]
    spec = flat[0][1]
    dims = broadcast_prefix(out_dims, tree_unflatten(flat[0][0], spec), "out_dims")
    joined = []
    for k, d in enumerate(dims):
        pieces = [leaves[k] for leaves, _ in flat]
        joined.append(pieces[0] if d is None else F.cat(pieces, d))
    return tree_unflatten(joined, spec)


__all__ = ["vmap"]
