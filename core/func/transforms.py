"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize`` and ``functionalize`` (``torch.func``'s).

The reverse transforms run the autograd engine on fresh leaves made from the inputs (aliases of inputs that
already require grad, so that an outer transform still sees through them), batched at every vmap level being
run, so that each element of a batch gets its own gradient. ``jvp`` enters a forward-AD level (``dual``).
Results keep their graph only where an outer reverse transform needs it.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

from ..autograd.grad_mode import enable_grad, no_grad
from ..dispatch.execution.modes import standing_aside
from ..dispatch.ops import F
from ..tensor import Tensor
from . import autograd_calls, dual, levels
from .batched import requiring_grad, unwrap_all, with_levels
from .pytree import tree_flatten, tree_unflatten

_reverse_depth = [0]  # reverse transforms being run: the inner ones keep their graphs for the outer ones


def _leaf_of(x, sizes: dict, name: str):
    """A fresh differentiable stand-in for input ``x``, batched at every vmap level of ``sizes``."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"{name}: Expected inputs to be Tensors, got {type(x).__name__}")
    if not x.dtype.is_inexact:
        raise RuntimeError(f"{name}: only Tensors of floating point and complex dtype can require gradients, got "
                           f"{x.dtype}")
    forward = [mode for mode in levels.active if not hasattr(mode, "size")]
    with contextlib.ExitStack() as hidden:  # physical work: forward levels get the stand-in's tangent after it
        for mode in forward:
            hidden.enter_context(standing_aside(mode))
        stand_in = requiring_grad(with_levels(x, sizes))
    for mode in forward:
        tangent = mode.tangent_of(x)
        if tangent is not None:
            mode.set_tangent(stand_in, tangent)
    return stand_in


def _argnums(argnums, count: int, name: str) -> tuple[int, ...]:
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    if not items or not all(isinstance(a, int) and not isinstance(a, bool) for a in items):
        raise RuntimeError(f"{name}: Expected argnums to be int or tuple of ints, got: {type(argnums)}")
    for a in items:
        if not -count <= a < count:
            raise RuntimeError(f"{name}: Got argnums={a}, but only {count} positional inputs")
    normalized = tuple(a % count for a in items)
    if len(set(normalized)) != len(normalized):
        raise RuntimeError(f"{name}: argnums must be unique, got {argnums}")
    return normalized


def _finish(t, keep: bool):
    """A result, cut from the graph unless an outer reverse transform needs it. Under forward AD, the cut is a
    view under no_grad (an op, so the tangent carries over; ``detach`` would drop it)."""
    if keep or not isinstance(t, Tensor):
        return t
    if levels.forward_active():
        with no_grad():
            return F.view(t, tuple(t.shape))
    return t.detach()


def _split_aux(out, has_aux: bool, name: str):
    """``(output, aux)`` of a function's result (aux None without ``has_aux``), checked as PyTorch checks it."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _tensor_leaves(out, name: str) -> tuple[list, object]:
    """The tensors of a function's (nested) output and its structure; anything else is refused."""
    outs, spec = tree_flatten(out)
    for o in outs:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{name}: Expected f(*primals) to return only tensors, got unsupported type {type(o)}")
    return outs, spec


@contextlib.contextmanager
def _reverse_transform():
    """While a reverse transform runs its function: inner ones keep their graphs for it."""
    _reverse_depth[0] += 1
    try:
        yield
    finally:
        _reverse_depth[0] -= 1


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to its inputs at ``argnums``, and its value: ``(grad, value)``; with
    ``has_aux``, ``(grad, (value, aux))`` (``torch.func.grad_and_value``)."""
    name = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        if not args:
            raise RuntimeError(f"{name}: Expected at least one positional arg, got none")
        nums = _argnums(argnums, len(args), name)
        sizes = levels.vmap_sizes()
        keep = _reverse_depth[0] > 0
        args = list(args)
        flat_inputs = {}
        with enable_grad():
            for a in nums:
                leaves, spec = tree_flatten(args[a])
                leaves = [_leaf_of(x, sizes, name) for x in leaves]
                keep = keep or any(unwrap_all(x)[0].grad_fn is not None for x in leaves)
                flat_inputs[a] = (leaves, spec)
                args[a] = tree_unflatten(leaves, spec)
            with _reverse_transform():
                out = func(*args, **kwargs)
            out, aux = _split_aux(out, has_aux, name)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{name}: Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"{name}: Expected f(*args) to return a scalar Tensor, got tensor with "
                                   f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            everything = [x for a in nums for x in flat_inputs[a][0]]
            found = [None] * len(everything)
            if out.requires_grad:
                found = autograd_calls.grad([out], everything, None, sizes, create_graph=keep)
        grads, at = [], 0
        for a in nums:
            leaves, spec = flat_inputs[a]
            part = [_finish(F.zeros_like(x) if g is None else g, keep) for x, g in zip(leaves, found[at:])]
            at += len(leaves)
            grads.append(tree_unflatten(part, spec))
        result = grads[0] if isinstance(argnums, int) else tuple(grads)
        value = _finish(out, keep)
        if has_aux:
            return result, (value, aux)
        return result, value
    return transformed


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """The gradient of scalar-valued ``func`` with respect to its inputs at ``argnums`` (``torch.func.grad``)."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        result, value = both(*args, **kwargs)
        return (result, value[1]) if has_aux else result
    return transformed


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``, and ``aux`` with ``has_aux``: ``vjp_fn(cotangents)`` is the tuple of
    vector-Jacobian products, one per primal, and may be called many times (or under vmap: ``jacrev``)."""
    name = "vjp(f, *primals)"
    sizes = levels.vmap_sizes()
    keep = _reverse_depth[0] > 0
    with enable_grad():
        leaves, spec = tree_flatten(primals)
        leaves = [_leaf_of(x, sizes, name) for x in leaves]
        keep = keep or any(unwrap_all(x)[0].grad_fn is not None for x in leaves)
        with _reverse_transform():
            out = func(*tree_unflatten(leaves, spec))
    out, aux = _split_aux(out, has_aux, name)
    outs, out_spec = _tensor_leaves(out, name)

    def vjp_fn(*cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        given = cotangents[0] if len(cotangents) == 1 else cotangents  # the outputs' structure, as one argument
        cots, cot_spec = tree_flatten(given)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               "outputs to the function")
        for o, c in zip(outs, cots):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {tuple(c.shape)} and "
                                   f"output[0] has a shape of {tuple(o.shape)}.")
        graph = keep or bool(create_graph) or any(c.requires_grad for c in cots)
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        found = [None] * len(leaves)
        if pairs:
            with enable_grad():
                found = autograd_calls.grad([o for o, _ in pairs], leaves, [c for _, c in pairs], sizes,
                                            retain_graph=retain_graph, create_graph=graph)
        done = [_finish(F.zeros_like(x) if g is None else g, graph) for x, g in zip(leaves, found)]
        return tree_unflatten(done, spec)

    value = tree_unflatten([_finish(o, keep) for o in outs], out_spec)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J·tangents)`` by forward-mode AD (``torch.func.jvp``); ``aux`` too with ``has_aux``."""
    name = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{name}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError(f"{name}: Expected tangents to be a tuple. E.g. it should be valid to call "
                           f"f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{name}: Expected primals and tangents to have the same python structure. For "
                           f"example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
                           f"with structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(f"{name}: Expected primals and tangents to be only Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{name}: Expected primals and tangents to have the same shape, got {tuple(p.shape)} "
                               f"and {tuple(t.shape)}")
    with dual.entered() as level:
        duals = []
        for p, t in zip(p_leaves, t_leaves):
            made = F.view(p, tuple(p.shape))
            level.set_tangent(made, t)
            duals.append(made)
        out, aux = _split_aux(func(*tree_unflatten(duals, p_spec)), has_aux, name)
        outs, out_spec = _tensor_leaves(out, name)
        found = [level.tangent_of(o) for o in outs]
    out_tangents = [F.zeros_like(o) if t is None else t for o, t in zip(outs, found)]
    result = (tree_unflatten(outs, out_spec), tree_unflatten(out_tangents, out_spec))
    return (*result, aux) if has_aux else result


def linearize(func: Callable, *primals) -> tuple[Any, Callable]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is J·tangents at ``primals``. Each call runs the
    forward pass again (PyTorch's traces it once)."""
    output = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """``func`` itself: Ember's transforms see an in-place op as its out-of-place op followed by a copy into the
    target, each with its own rule, so there are no mutations to remove first (``torch.func.functionalize``
    exists for PyTorch's compilers and transforms, which need them removed)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           f"Valid options are:\n     remove='mutations'\n     remove='mutations_and_views'")

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        return func(*args, **kwargs)
    return transformed
