"""A compiled forward and its compiled backward, exposed to autograd as one graph node.

Capturing a differentiable program records its forward, then runs ``autograd.grad`` from its outputs
to its leaves (parameters, and arguments that require grad) under the same tracer: since every
derivative is written in Ember ops, that backward is captured like any program. At replay the forward
program returns the outputs and the values the backward reads; ``CompiledBackward`` keeps those and runs
the backward program when autograd reaches it.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..autograd.graph import _FREED, Node, edge_of
from ..dispatch.execution import links


class CompiledBackward(Node):
    """The node of one compiled call: gradients of its outputs in, gradients of its leaves out."""

    __slots__ = ("program", "saved", "input_meta", "output_meta", "grad_positions", "leaf_count")

    def __init__(self, leaves: list, program, saved: tuple, output_meta: tuple, grad_positions: list) -> None:
        super().__init__(tuple(edge_of(t) for t in leaves), len(output_meta), "compiled")
        self.program = program
        self.saved = saved
        self.input_meta = tuple((tuple(t._data.shape), t._dtype, t._device) for t in leaves)
        self.output_meta = output_meta
        self.grad_positions = grad_positions  # per program output: the leaf it is the gradient of
        self.leaf_count = len(leaves)

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def apply(self, grads: list, retain_graph: bool) -> list:
        if self.saved is None:
            raise RuntimeError(_FREED.format(name=self.name()))
        if links.recorder.state.enabled:
            raise RuntimeError("ember.compile: the backward of a compiled region cannot itself be differentiated "
                               "(create_graph=True); run that part uncompiled with ember.compiler.disable")
        natives = []
        for g, (shape, dtype, device) in zip(grads, self.output_meta):
            if g is None:  # an output nothing downstream used: its gradient is zero
                from ..dispatch.ops import F
                g = F.zeros(shape, dtype=dtype, device=device)
            natives.append(g._data)
        outputs = self.program.run(*natives, *self.saved)
        if not retain_graph:
            self.saved = None
        wrap = links.tensor.wrap
        result: list = [None] * self.leaf_count
        for position, native in zip(self.grad_positions, outputs):
            shape, dtype, device = self.input_meta[position]
            result[position] = wrap(native, dtype, device)
        return result


def attach(outputs: list, leaves: list, program, saved: tuple, grad_positions: list) -> None:
    """Make the floating tensors among ``outputs`` results of one ``CompiledBackward`` node."""
    meta = tuple((tuple(t._data.shape), t._dtype, t._device) for t in outputs)
    node = CompiledBackward(leaves, program, saved, meta, grad_positions)
    for nr, t in enumerate(outputs):
        if t._dtype.is_floating_point:
            t.requires_grad = True
            t.grad_fn = node
            t._output_nr = nr


class _Boundary(Node):
    """Where a compiled region's argument enters it. Gradients pass through to the argument, except while the
    region's backward is being captured: the capture must stop at the region's edge."""

    __slots__ = ("input_meta",)
    cutting = False

    def __init__(self, t) -> None:
        super().__init__((edge_of(t),), 1, "compiled_input")
        self.input_meta = (None,)

    def apply(self, grads: list, retain_graph: bool):
        return None if _Boundary.cutting else grads


def boundary(t):
    """An alias of ``t`` whose gradient flows to ``t`` through a ``_Boundary`` node."""
    alias = t.detach()
    alias.requires_grad = True
    alias.grad_fn = _Boundary(t)
    alias._output_nr = 0
    return alias


@contextmanager
def boundaries_cut() -> Iterator[None]:
    """While a region's backward is captured: gradients stop at the region's edge."""
    _Boundary.cutting = True
    try:
        yield
    finally:
        _Boundary.cutting = False


__all__ = ["CompiledBackward", "attach", "boundary", "boundaries_cut"]
