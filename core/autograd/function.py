"""``ember.autograd.Function``: user-defined ops with a hand-written backward, as in PyTorch."""
from __future__ import annotations

from ..tensor import Tensor
from . import saved as saving
from .graph import Node, edge_of
from .grad_mode import no_grad, state


class FunctionCtx:
    """The ``ctx`` given to forward and backward: saved tensors and what needs gradients."""

    def __init__(self) -> None:
        self._saved = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self._non_differentiable: set = set()
        self._materialize = True
        self._released = False

    def save_for_backward(self, *tensors) -> None:
        saved = tuple(None if t is None else saving.SavedTensor(t) for t in tensors)
        if saving.hook_stack:
            saved = tuple(None if s is None else saving.hooked(s, None)[0] for s in saved)
        self._saved = saved

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError("Trying to backward through the graph a second time: saved tensors of this "
                               "Function were freed; pass retain_graph=True to backward the first time")
        return tuple(None if s is None else s.unpack(self._name, "a tensor saved with save_for_backward")
                     for s in self._saved)

    def save_for_forward(self, *tensors) -> None:
        """Tensors ``jvp`` reads through ``saved_tensors`` (PyTorch's rule: what it saves for its JVP)."""
        self.save_for_backward(*tensors)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value


class FunctionNode(Node):
    __slots__ = ("fn", "ctx", "input_meta", "output_meta")

    def name(self) -> str:
        return f"{self.fn.__name__}Backward"

    def apply(self, grads, retain_graph):
        if self.ctx._materialize:
            from ..dispatch.ops import F
            grads = [g if g is not None else F.zeros(meta[0], dtype=meta[1], device=meta[2])
                     for g, meta in zip(grads, self.output_meta)]
        out = self.fn.backward(self.ctx, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        if len(out) != len(self.next_edges):
            raise RuntimeError(f"function {self.fn.__name__}.backward returned {len(out)} gradients, expected "
                               f"{len(self.next_edges)} (one per forward argument)")
        if not retain_graph:
            self.ctx._released = True
        return [g if isinstance(g, Tensor) else None for g in out]


#: ``ember.func``'s forward AD while a forward level is entered: runs a Function's forward and gives its outputs
#: tangents from ``Function.jvp`` (``ember.func.dual.FunctionTangents``); None otherwise
forward_levels: list = [None]


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass must define backward(ctx, ...) to be differentiated")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD: the outputs' tangents from the inputs' (None for an input without one)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx()
        ctx._name = cls.__name__
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        ctx.needs_input_grad = tuple(t is not None and t.requires_grad for t in tensors)
        forward_ad = forward_levels[0]
        with no_grad():
            if forward_ad is None:
                outputs = cls.forward(ctx, *args)
            else:
                outputs, tangents_for = forward_ad.forward(cls, ctx, args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if state.enabled and any(ctx.needs_input_grad):
            node = FunctionNode(tuple(edge_of(t) if t is not None else None for t in tensors),
                                len(outs), cls.__name__)
            node.fn, node.ctx = cls, ctx
            node.input_meta = tuple(None if t is None else (tuple(t._data.shape), t._dtype, t._device)
                                    for t in tensors)
            node.output_meta = tuple((tuple(o._data.shape), o._dtype, o._device) for o in outs)
            outs = tuple(_attach(o, node, nr, ctx, args) for nr, o in enumerate(outs))
        if forward_ad is not None:
            tangents_for(outs)
        return outs[0] if single else outs


def _attach(out, node, nr, ctx, args):
    if any(out is a for a in args):
        out = out.view_as(out)  # an input returned as-is gets a new identity, as in PyTorch
    if id(out) not in ctx._non_differentiable and out._dtype.is_inexact:
        out.requires_grad = True
        out.grad_fn = node
        out._output_nr = nr
    return out
