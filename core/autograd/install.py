"""Connects autograd to the dispatcher: the recorder dispatch calls on every op and device transfer."""
from __future__ import annotations

from ..dispatch.execution import links
from ..tensor import Tensor
from . import graph
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


class AutogradRecorder:
    """Autograd as dispatch sees it (``ember.dispatch.execution.links.Recorder``), registered once at import."""

    state = state
    record = staticmethod(graph.record)
    record_transfer = staticmethod(_record_transfer)
    check_mutation = staticmethod(graph.check_mutation)
    no_grad = staticmethod(no_grad)


def install() -> None:
    links.register_recorder(AutogradRecorder())
