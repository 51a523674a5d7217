"""Tensor's autograd methods: ``backward``, gradient hooks, ``retain_grad``/``retains_grad`` and ``data``
(listed in ``ember.tensor.surface``)."""
from __future__ import annotations

import weakref

from ..dispatch.ops import F
from ..tensor import Tensor, wrap
from . import gradients, graph


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate this tensor's gradient with respect to every leaf into the leaves' ``.grad``."""
    gradients.backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)


class _RemovableHandle:
    def __init__(self, hooks: list, hook) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def register_hook(self, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed; it may return a replacement."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        hooks = graph.accumulator(self).hooks
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)
    self.grad_fn.register_prehook(self._output_nr, hook)
    return _RemovableHandle(self.grad_fn.pre_hooks[self._output_nr], hook)


def register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs after the gradient has been accumulated into this leaf's ``.grad``."""
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = graph.accumulator(self).post_hooks
    hooks.append(hook)
    return _RemovableHandle(hooks, hook)


def retain_grad(self) -> None:
    """Keep ``.grad`` for this non-leaf tensor too."""
    if self.grad_fn is None:
        return
    ref = weakref.ref(self)

    def store(grad):
        tensor = ref()
        if tensor is not None:
            tensor.grad = grad.detach() if tensor.grad is None else F.add(tensor.grad, grad.detach())
    self.grad_fn.register_prehook(self._output_nr, store)


def get_data(self) -> Tensor:
    """The same storage without autograd history, and with its own version counter (as in PyTorch)."""
    out = wrap(self._data, self._dtype, self._device)
    out._base = self if self._base is None else self._base
    return out


def set_data(self, value: Tensor) -> None:
    self._data, self._dtype, self._device = value._data, value._dtype, value._device


def retains_grad(self) -> bool:
    """Whether ``retain_grad`` was called on this non-leaf tensor."""
    pre_hooks = (self.grad_fn.pre_hooks or {}).get(self._output_nr, ()) if self.grad_fn is not None else ()
    return any(getattr(hook, "__name__", "") == "store" for hook in pre_hooks)
