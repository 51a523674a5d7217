"""Connects autograd to the dispatcher and gives Tensor its autograd methods."""
from __future__ import annotations

import weakref

from ..dispatch import links
from ..dispatch.ops import F
from ..tensor import Tensor, wrap
from . import functional, graph
from .grad_mode import is_grad_enabled, no_grad, state


class ToDeviceBackward(graph.Node):
    """A copy between devices: the gradient goes back to the source device."""

    __slots__ = ("source_device", "input_meta")

    def apply(self, grads, retain_graph):
        return [grads[0].to(self.source_device)]


def _record_transfer(source: Tensor, copy: Tensor) -> None:
    if not is_grad_enabled():
        return
    node = ToDeviceBackward((graph.edge_of(source),), 1, "to")
    node.source_device = source._device
    node.input_meta = ((tuple(source._data.shape), source._dtype, source._device),)
    copy.requires_grad = True
    copy.grad_fn = node


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate this tensor's gradient with respect to every leaf into the leaves' ``.grad``."""
    functional.backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)


class _RemovableHandle:
    def __init__(self, hooks: list, hook) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _register_hook(self, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed; it may return a replacement."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        hooks = graph.accumulator(self).hooks
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)
    self.grad_fn.register_prehook(self._output_nr, hook)
    return _RemovableHandle(self.grad_fn.pre_hooks[self._output_nr], hook)


def _register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs after the gradient has been accumulated into this leaf's ``.grad``."""
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = graph.accumulator(self).post_hooks
    hooks.append(hook)
    return _RemovableHandle(hooks, hook)


def _retain_grad(self) -> None:
    """Keep ``.grad`` for this non-leaf tensor too."""
    if self.grad_fn is None:
        return
    ref = weakref.ref(self)

    def store(grad):
        tensor = ref()
        if tensor is not None:
            tensor.grad = grad.detach() if tensor.grad is None else F.add(tensor.grad, grad.detach())
    self.grad_fn.register_prehook(self._output_nr, store)


def _get_data(self) -> Tensor:
    """The same storage without autograd history, and with its own version counter (as in PyTorch)."""
    out = wrap(self._data, self._dtype, self._device)
    out._base = self if self._base is None else self._base
    return out


def _set_data(self, value: Tensor) -> None:
    self._data, self._dtype, self._device = value._data, value._dtype, value._device


class AutogradRecorder:
    """Autograd as dispatch sees it (``ember.dispatch.links.Recorder``), registered once at import."""

    state = state
    record = staticmethod(graph.record)
    record_transfer = staticmethod(_record_transfer)
    check_mutation = staticmethod(graph.check_mutation)
    no_grad = staticmethod(no_grad)


def install() -> None:
    links.register_recorder(AutogradRecorder())
    Tensor.backward = _backward
    Tensor.register_hook = _register_hook
    Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
    Tensor.retain_grad = _retain_grad
    Tensor.data = property(_get_data, _set_data)
    Tensor.retains_grad = property(lambda self: any(
        getattr(h, "__name__", "") == "store" for h in ((self.grad_fn.pre_hooks or {}).get(self._output_nr, ())
                                                        if self.grad_fn is not None else ())))
