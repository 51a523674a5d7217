"""The autograd engine on tensors batched by vmap.

Under vmap the graph is recorded on physical tensors (the batch dims first): elements never mix, so the
gradient of the sum over the batch is every element's own gradient. ``grad`` here takes the tensors as the
function saw them, runs the engine on their physical tensors with respect to the vmap levels that were active
when the graph was recorded (``recorded_at``), and hands back gradients batched as the inputs were. Levels
entered since (``vmap`` of a ``vjp`` function: ``jacrev``) stay batched through the engine, whose derivative
ops are then batched by those levels' rules.
"""
from __future__ import annotations

from ..autograd.gradients import grad as autograd_grad
from ..dispatch.ops import F
from .batched import restored_levels, unwrap_all, with_levels, without_levels


def grad(outputs: list, inputs: list, grad_outputs: list | None, recorded_at: dict, *, retain_graph=None,
         create_graph: bool = False, allow_unused: bool = True) -> list:
    """d(outputs)/d(inputs) contracted with ``grad_outputs`` (None: ones), all as the function saw them.
    ``recorded_at``: level -> batch size of the vmaps active when the graph was recorded."""
    record_levels = tuple(sorted(recorded_at))
    physical_outputs = [without_levels(with_levels(out, recorded_at), record_levels) for out in outputs]
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    physical_grads = []
    for out, g, physical in zip(outputs, grad_outputs, physical_outputs):
        if g is None:
            physical_grads.append(F.ones_like(physical))
        else:
            physical_grads.append(without_levels(with_levels(g, recorded_at), record_levels))
    unwrapped = [unwrap_all(x) for x in inputs]  # the graph holds the inputs' physical tensors themselves
    physical_inputs = [physical for physical, _ in unwrapped]
    input_levels = [levels for _, levels in unwrapped]
    grads = autograd_grad(physical_outputs, physical_inputs, physical_grads, retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=allow_unused)
    return [None if g is None else restored_levels(g, levels) for g, levels in zip(grads, input_levels)]
