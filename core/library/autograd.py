"""A custom op's derivative, from PyTorch's ``register_autograd(backward, setup_context=...)``.

An Ember op carries its derivative in its schema entry (``OpDef.derivative``): a function whose parameter names
say what the op's graph node saves (the inputs by name, ``result`` or ``results``) and which returns one gradient
per tensor input. ``derivative`` writes such a function around the user's pair. When the node's backward runs, it
calls ``setup_context(ctx, inputs, output)`` (or ``(ctx, inputs, keyword_only_inputs, output)`` for an op with
keyword-only arguments) on the saved inputs and outputs, then ``backward(ctx, *grads)``, and checks what came
back (one gradient per input, None for an input that is not a tensor, shapes that fit) before the engine gets
the tensors' gradients. The saved inputs are the very tensors the op was called with, so a backward written in
Ember ops is itself differentiable (double backward).

Ember runs ``setup_context`` when the backward runs, not when the op runs: the node keeps every input and output
(checked against in-place changes like any saved tensor), and ``setup_context`` saves on ``ctx`` from those.
"""
from __future__ import annotations

import inspect
from typing import Callable

from ..autograd.function import FunctionCtx
from ..dispatch.schema import Param
from ..tensor import Tensor

_LISTS = ("Tensor[]", "Index?[]")


class CustomOpCtx(FunctionCtx):
    """The ``ctx`` of a custom op's ``setup_context`` and ``backward`` (``torch.autograd.Function``'s ctx)."""

    def __init__(self, name: str, needs_input_grad: tuple) -> None:
        super().__init__()
        self._name = name
        self.needs_input_grad = needs_input_grad


def missing(qualname: str) -> Callable:
    """The derivative of a custom op without one: its graph node is recorded, and its backward raises, as in
    PyTorch (the forward works; differentiating it does not)."""
    def derivative(grads):
        raise RuntimeError(f"Trying to backward through {qualname} but no autograd formula was registered. Please "
                           f"use register_autograd to add one.")
    return derivative


def derivative(qualname: str, params: tuple[Param, ...], backward: Callable, setup_context: Callable | None,
               many: bool) -> Callable:
    """``OpDef.derivative`` for a custom op of ``params`` from the user's ``backward`` and ``setup_context``
    (``many``: the op returns a tuple of outputs)."""
    positional = tuple(p for p in params if not p.kw_only)
    keyword = tuple(p for p in params if p.kw_only)
    count = len(params)

    def run(grads, *saved):
        values, output = saved[:count], saved[count]
        if many:
            output = tuple(output)
        inputs = tuple(values[:len(positional)])
        ctx = CustomOpCtx(qualname, tuple(_requires_grad(v) for v in inputs))
        if setup_context is not None:
            if keyword:
                keyword_only = {p.name: v for p, v in zip(keyword, values[len(positional):])}
                setup_context(ctx=ctx, inputs=inputs, keyword_only_inputs=keyword_only, output=output)
            else:
                setup_context(ctx=ctx, inputs=inputs, output=output)
        return _checked(qualname, positional, inputs, backward(ctx, *grads))

    # the names the graph node saves and hands over, in this order (graph.derivative_inputs reads them)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    run.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in
                                           ("grads", *(p.name for p in params), "results" if many else "result")])
    run.__name__ = f"{qualname}.backward"
    return run


def _requires_grad(value) -> bool:
    if isinstance(value, Tensor):
        return value.requires_grad
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, Tensor) and v.requires_grad for v in value)
    return False


def _checked(qualname: str, positional: tuple, inputs: tuple, grads) -> tuple:
    """The gradients of the tensor inputs, from what ``backward`` returned: one per input (a lone gradient for an
    op of one input), None for inputs that are not tensors; lists of them for a list of tensors."""
    if not isinstance(grads, tuple):
        grads = tuple(grads) if isinstance(grads, list) and len(positional) > 1 else (grads,)
    if len(grads) != len(positional):
        raise RuntimeError(f"{qualname}: backward returned {len(grads)} gradient(s), but the op has "
                           f"{len(positional)} input(s) ({', '.join(p.name for p in positional)}): return one per "
                           f"input, None for those that are not tensors or need none")
    out = []
    for at, (p, value, grad) in enumerate(zip(positional, inputs, grads)):
        if not p.is_tensor:
            if grad is not None:
                raise RuntimeError(f"{qualname}: backward returned a gradient for input '{p.name}' (index {at}), "
                                   f"which is not a tensor; return None there")
            continue
        if p.type in _LISTS:
            if grad is not None:
                if not isinstance(grad, (list, tuple)) or len(grad) != len(value):
                    raise RuntimeError(f"{qualname}: backward must return a list of {len(value)} gradients (or None) "
                                       f"for input '{p.name}' (index {at}), got {type(grad).__name__}")
                for k, (g, v) in enumerate(zip(grad, value)):
                    _check_one(qualname, f"'{p.name}'[{k}]", g, v)
                grad = list(grad)
            out.append(grad)
            continue
        _check_one(qualname, f"'{p.name}' (index {at})", grad, value)
        out.append(grad)
    return tuple(out)


def _check_one(qualname: str, where: str, grad, value) -> None:
    """A gradient is None, or a tensor whose shape the engine can sum to the input's (broadcasting)."""
    if grad is None:
        return
    if not isinstance(grad, Tensor):
        raise RuntimeError(f"{qualname}: backward returned {type(grad).__name__} as the gradient of input {where}; "
                           f"return an ember.Tensor (or None)")
    if not isinstance(value, Tensor):
        return
    got, shape = tuple(grad.shape), tuple(value.shape)
    fits = len(got) >= len(shape) and all(s in (g, 1) for s, g in zip(reversed(shape), reversed(got)))
    if not fits:
        raise RuntimeError(f"{qualname}: backward returned a gradient of shape {got} for input {where} of shape "
                           f"{shape}")


__all__ = ["CustomOpCtx", "derivative", "missing"]
