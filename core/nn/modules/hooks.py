"""Module hook plumbing: removable handles, and full backward hooks built from two identity Functions."""
from __future__ import annotations

import itertools

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor

_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_*_hook``; ``remove()`` unregisters the hook (also usable with ``with``)."""

    def __init__(self, store: dict, key: int) -> None:
        self._store, self.id = store, key

    @classmethod
    def add(cls, store: dict, hook) -> "RemovableHandle":
        key = next(_ids)
        store[key] = hook
        return cls(store, key)

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _HookState:
    def __init__(self, module, hooks, input_count: int) -> None:
        self.module, self.hooks, self.input_count = module, hooks, input_count
        self.grad_output = None
        self.entered = False


def _run_hooks(state: _HookState, grad_input: tuple) -> tuple:
    for hook in state.hooks:
        result = hook(state.module, grad_input, state.grad_output)
        if result is not None:
            grad_input = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    return grad_input


class _Identity(Function):
    """Passes tensors through; subclasses act on their gradients."""

    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tensors


class _Entry(_Identity):
    """On the module's inputs: its backward sees grad_input and runs the hooks."""

    @staticmethod
    def backward(ctx, *grads):
        return (None, *_run_hooks(ctx.state, grads))


class _Exit(_Identity):
    """On the module's outputs: its backward records grad_output."""

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        state.grad_output = grads
        if not state.entered:  # no input needs a gradient: the hooks run now, with grad_input of Nones
            _run_hooks(state, (None,) * state.input_count)
        return (None, *grads)


def attach_backward_hooks(module, args: tuple, hooks: list):
    """Wrap inputs before forward; returns the new args and a function that wraps the outputs."""
    tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    state = _HookState(module, hooks, len(tensor_positions))
    requiring = [i for i in tensor_positions if args[i].requires_grad]
    if requiring and is_grad_enabled():
        state.entered = True
        wrapped = _Entry.apply(state, *[args[i] for i in requiring])
        args = list(args)
        for i, t in zip(requiring, wrapped):
            args[i] = t
        args = tuple(args)

    def finish(output):
        outputs = output if isinstance(output, tuple) else (output,)
        positions = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
        if not positions or not is_grad_enabled():
            return output
        wrapped = _Exit.apply(state, *[outputs[i] for i in positions])
        outputs = list(outputs)
        for i, t in zip(positions, wrapped):
            outputs[i] = t
        return tuple(outputs) if isinstance(output, tuple) else outputs[0]
    return args, finish
