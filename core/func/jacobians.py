"""``jacrev``, ``jacfwd`` and ``hessian`` (``torch.func``'s): whole Jacobians as ``vmap`` over a basis.

``jacrev`` maps the vector-Jacobian product over the rows of an identity (one row per output element);
``jacfwd`` maps the Jacobian-vector product over its columns (one per input element). Each output's Jacobian
with respect to each input has the output's shape followed by the input's.
"""
from __future__ import annotations

import functools
from typing import Callable

from ..dispatch.ops import F
from .pytree import tree_flatten, tree_unflatten
from .transforms import _argnums, jvp, vjp
from .vmap import vmap


def _split_basis(tensors: list, name: str) -> tuple[list, list]:
    """An identity over all elements of ``tensors``, cut into one piece per tensor shaped (N, *its shape)."""
    sizes = [t.numel() for t in tensors]
    total = sum(sizes)
    if total == 0:
        raise RuntimeError(f"{name}: the function's tensors have no elements")
    basis = F.eye(total, dtype=tensors[0].dtype, device=tensors[0].device)
    pieces, at = [], 0
    for t, n in zip(tensors, sizes):
        pieces.append(F.reshape(F.narrow(basis, 1, at, n), (total, *t.shape)))
        at += n
    return pieces, sizes


def _selected(func: Callable, args: tuple, nums: tuple[int, ...]) -> tuple[Callable, tuple]:
    """``func`` as a function of its arguments at ``nums`` only, and those arguments."""
    def of_selected(*chosen):
        full = list(args)
        for a, value in zip(nums, chosen):
            full[a] = value
        return func(*full)
    return of_selected, tuple(args[a] for a in nums)


def _nest(blocks: list[list], out_spec, in_spec, single_input: bool):
    """Per output, per input Jacobian blocks, in the nesting of the outputs and inputs."""
    rows = [blocks_i[0] if single_input else tree_unflatten(blocks_i, in_spec) for blocks_i in blocks]
    return tree_unflatten(rows, out_spec)


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``func`` by reverse-mode AD, with respect to the inputs at ``argnums``."""
    name = "jacrev(f)(*args)"

    @functools.wraps(func)
    def transformed(*args):
        nums = _argnums(argnums, len(args), name)
        inner, chosen = _selected(func, args, nums)
        made = vjp(inner, *chosen, has_aux=has_aux)
        out, vjp_fn = made[0], made[1]
        outs, out_spec = tree_flatten(out)
        ins, in_spec = tree_flatten(chosen if not isinstance(argnums, int) else chosen[0])
        pieces, sizes = _split_basis(outs, name)

        def row(*cotangents):
            found = vjp_fn(tree_unflatten(list(cotangents), out_spec))
            return tuple(tree_flatten(found if not isinstance(argnums, int) else found[0])[0])
        columns = vmap(row, chunk_size=chunk_size)(*pieces)  # per input: (N_out, *input shape)
        blocks, at = [], 0
        for o, n in zip(outs, sizes):
            blocks.append([F.reshape(F.narrow(c, 0, at, n), (*o.shape, *x.shape)) for c, x in zip(columns, ins)])
            at += n
        jac = _nest(blocks, out_spec, in_spec, isinstance(argnums, int) and len(ins) == 1 and in_spec.is_leaf)
        return (jac, made[2]) if has_aux else jac
    return transformed


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` by forward-mode AD, with respect to the inputs at ``argnums``."""
    name = "jacfwd(f)(*args)"

    @functools.wraps(func)
    def transformed(*args):
        nums = _argnums(argnums, len(args), name)
        inner, chosen = _selected(func, args, nums)
        ins, in_spec = tree_flatten(chosen)
        pieces, sizes = _split_basis(ins, name)
        aux_box = []

        def column(*tangents):
            result = jvp(inner, chosen, tree_unflatten(list(tangents), in_spec), has_aux=has_aux)
            if has_aux:
                aux_box.append(result[2])
            return result[0], result[1]
        out, tangents = vmap(column, randomness=randomness, out_dims=(0, -1))(*pieces)
        outs, out_spec = tree_flatten(out)
        outs = [F.select(o, 0, 0) for o in outs]  # the same for every column (batched where a grad inside made it so)
        t_outs = tree_flatten(tangents)[0]
        single_in = tree_flatten(chosen[0] if isinstance(argnums, int) else chosen)
        blocks = []
        for o, t in zip(outs, t_outs):  # t: (*output shape, N_in)
            row, at = [], 0
            for x, n in zip(ins, sizes):
                row.append(F.reshape(F.narrow(t, -1, at, n), (*o.shape, *x.shape)))
                at += n
            blocks.append(row)
        if isinstance(argnums, int):
            blocks = [tree_unflatten(row, single_in[1]) if not single_in[1].is_leaf else row[0] for row in blocks]
            jac = tree_unflatten(blocks, out_spec)
        else:
            jac = tree_unflatten([tree_unflatten(row, in_spec) for row in blocks], out_spec)
        return (jac, aux_box[0]) if has_aux else jac
    return transformed


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of scalar-valued ``func``: ``jacfwd(jacrev(func))``, forward over reverse."""
    return jacfwd(jacrev(func, argnums), argnums)
