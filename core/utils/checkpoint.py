"""Activation checkpointing: run a block without saving activations, recompute them in backward."""
from __future__ import annotations

from ..autograd.function import Function
from ..autograd.gradients import backward as autograd_backward
from ..autograd.grad_mode import enable_grad
from ..dispatch.contract import registry
from ..tensor import Tensor


def _rng_states(args):
    """The default generators' states of the CPU and of every device the tensor arguments are on: what
    the block's random ops (dropout) draw from, so that recomputing it draws the same numbers."""
    devices = {registry.resolve_device("cpu")} | {a.device for a in args if isinstance(a, Tensor)}
    return [(d, registry.get_backend(d.type).default_generator(d.index).get_state()) for d in devices]


def _restore_rng(states) -> None:
    for d, state in states:
        registry.get_backend(d.type).default_generator(d.index).set_state(state)


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, fn, preserve_rng_state, *args):
        ctx.fn = fn
        ctx.rng = _rng_states(args) if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        return fn(*args)

    @staticmethod
    def backward(ctx, *grads):
        tensors = ctx.saved_tensors
        args = list(ctx.args)
        detached = []
        for position, t in zip(ctx.tensor_positions, tensors):
            d = t.detach()
            d.requires_grad = t.requires_grad
            args[position] = d
            detached.append(d)
        current = _rng_states(tensors) if ctx.rng is not None else None
        if ctx.rng is not None:
            _restore_rng(ctx.rng)
        try:
            with enable_grad():
                outputs = ctx.fn(*args)
        finally:
            if current is not None:
                _restore_rng(current)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if pairs:
            autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        grads_in = [None] * len(ctx.args)
        for position, d in zip(ctx.tensor_positions, detached):
            grads_in[position] = d.grad
        return (None, None, *grads_in)


def checkpoint(function, *args, use_reentrant: bool = True, preserve_rng_state: bool = True):
    """``function(*args)`` whose intermediate activations are recomputed during backward instead of stored.

    Gradients reach the tensors in ``args`` and the parameters ``function`` uses (through its own graph,
    rebuilt in backward)."""
    return _Checkpoint.apply(function, preserve_rng_state, *args)

