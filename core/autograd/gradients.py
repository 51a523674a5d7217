"""``backward`` and ``grad``: the two ways to run the engine."""
from __future__ import annotations

from ..dispatch.ops import F
from ..tensor import Tensor
from .engine import run_backward
from .graph import edge_of


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


_units: dict = {}


def _unit_gradient(out):
    """The implicit gradient 1 of a scalar loss. Cached per (shape, dtype, device): every training step
    needs one, and derivatives never write into their incoming gradient. A leaf root gets a fresh one,
    because it would be stored as that leaf's ``.grad``, which optimizers update in place."""
    if out.grad_fn is None:
        return F.full(tuple(out.shape), 1, dtype=out.dtype, device=out.device)
    key = (out._data.shape, out._dtype, out._device)
    unit = _units.get(key)
    if unit is None or unit._version[0] != 0:
        unit = _units[key] = F.full(tuple(out.shape), 1, dtype=out.dtype, device=out.device)
    return unit


def _default_grads(outputs, grad_outputs):
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} grad_outputs for {len(outputs)} outputs")
    filled = []
    for out, g in zip(outputs, grads):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got an output of "
                                   f"shape {tuple(out.shape)}: pass gradient=")
            if not out._dtype.is_floating_point:  # a complex loss has no direction of steepest descent
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{out.dtype}")
            g = _unit_gradient(out)
        elif not isinstance(g, Tensor):
            g = F.full_like(out, g)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"mismatch in shape: grad_output of shape {tuple(g.shape)} for an output of shape "
                               f"{tuple(out.shape)}")
        filled.append(g)
    return filled


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate d(tensors)/d(leaf) into every leaf's ``.grad`` (or only into ``inputs``')."""
    outputs = _as_list(tensors)
    grads = _default_grads(outputs, grad_tensors)
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        results = grad(outputs, _as_list(inputs), grads, retain_graph=retain, create_graph=create_graph,
                       allow_unused=True)
        for leaf, g in zip(_as_list(inputs), results):
            if g is not None:
                leaf.grad = g if leaf.grad is None else F.add(leaf.grad, g)
        return
    run_backward(outputs, grads, retain, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool = False, materialize_grads: bool = False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated."""
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError(f"grad: one of the inputs (shape {tuple(t.shape)}) does not require grad")
    grads = _default_grads(outputs, grad_outputs)
    edges = [edge_of(t) for t in inputs]
    capture = {edge: None for edge in edges}
    retain = create_graph if retain_graph is None else retain_graph
    run_backward(outputs, grads, retain, create_graph, capture=capture)
    results = []
    for t, edge in zip(inputs, edges):
        g = capture[edge]
        if g is None:
            if materialize_grads:
                g = F.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"grad: one of the differentiated tensors (shape {tuple(t.shape)}) appears to "
                                   f"not have been used in the graph; set allow_unused=True if this is intended")
        elif tuple(g.shape) != tuple(t.shape):
            from .engine import sum_to_shape
            g = sum_to_shape(g, tuple(t.shape))
        results.append(g)
    return tuple(results)
