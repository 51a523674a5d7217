"""The backward engine: walks the graph from the roots in dependency order, one pass.

Gradients of broadcast inputs are reduced to the input's shape here, in one place, and cast
to the input's dtype, so derivative formulas never deal with broadcasting. A real input that
receives a complex gradient (a real tensor fed into a complex op) keeps its real part, as in
PyTorch: the cast to the input's dtype is what takes it.
"""
from __future__ import annotations

from ..dispatch.execution.modes import active as active_modes, backward_node
from ..dispatch.ops import F
from .anomaly import check_gradients
from .graph import AccumulateGrad, Node, edge_of
from .grad_mode import state


def sum_to_shape(grad, shape: tuple):
    """Sum ``grad`` over the dims that broadcasting added or expanded from size 1."""
    gshape = tuple(grad._data.shape)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    if lead < 0:  # a setitem value with leading size-1 dims, assigned without them: put them back
        grad = F.reshape(grad, (1,) * -lead + gshape)
        gshape, lead = tuple(grad._data.shape), 0
    inner = [lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1]
    if lead and not inner:  # only broadcast leading dims (a bias): their sum has the shape already
        return F.sum(grad, list(range(lead)))
    dims = list(range(lead)) + inner
    if dims:
        grad = F.sum(grad, dims, True)
    return F.view(grad, shape) if tuple(grad._data.shape) != shape else grad


def _fit(grad, meta):
    shape, dtype, device = meta
    if grad._data.shape == shape and grad._dtype is dtype and grad._device is device:
        return grad  # the usual case
    grad = sum_to_shape(grad, tuple(shape))
    if grad._dtype is not dtype:
        grad = F.to_dtype(grad, dtype)
    if grad._device is not device:
        grad = grad.to(device)
    return grad


def _add(existing, new):
    return new if existing is None else F.add(existing, new)


def _dependencies(roots: list[Node]) -> dict:
    """How many edges point at each node reachable from the roots."""
    counts: dict = {}
    stack = list(dict.fromkeys(roots))
    seen = set(stack)
    while stack:
        for edge in stack.pop().next_edges:
            if edge is not None:
                child = edge[0]
                counts[child] = counts.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    return counts


def _run_hooks(hooks, grad):
    for hook in hooks:
        result = hook(grad)
        if result is not None:
            grad = result
    return grad


_final_callbacks: list[list] = []  # one list per running backward pass, innermost last


def queue_callback(callback) -> None:
    """Run ``callback()`` once the backward pass now running has finished (PyTorch's
    ``Variable._execution_engine.queue_callback``): DDP waits for its all-reduces there."""
    if not _final_callbacks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(callback)


def run_backward(roots, grad_roots, retain_graph: bool, create_graph: bool, capture=None):
    """Propagate ``grad_roots`` from ``roots`` (tensors), then run the callbacks queued meanwhile."""
    callbacks: list = []
    _final_callbacks.append(callbacks)
    try:
        _propagate(roots, grad_roots, retain_graph, create_graph, capture)
        while callbacks:  # a callback may queue another
            callbacks.pop(0)()
    finally:
        _final_callbacks.pop()


def _propagate(roots, grad_roots, retain_graph: bool, create_graph: bool, capture=None):
    """With ``capture`` (a dict edge -> None), gradients arriving at those edges are stored there
    instead of being accumulated into ``.grad``."""
    buffers: dict = {}
    root_nodes = []
    for tensor, grad in zip(roots, grad_roots):
        edge = edge_of(tensor)
        if edge is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        node, nr = edge
        slots = buffers.setdefault(node, [None] * node.num_outputs)
        slots[nr] = _add(slots[nr], grad)
        root_nodes.append(node)
    counts = _dependencies(root_nodes)
    ready = [n for n in dict.fromkeys(root_nodes) if n not in counts]
    handed: set = set()  # ids of gradient tensors already stored in some leaf's .grad
    previous = (state.enabled, state.inference)
    state.enabled, state.inference = create_graph, False
    anomaly = state.anomaly
    observed = bool(active_modes)  # a mode (the profiler) wants to see each node's backward
    add = F.add
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None) or [None] * node.num_outputs
            if node.__class__ is AccumulateGrad:
                _reach_leaf(node, grads, capture, create_graph, handed)
                continue
            if node.pre_hooks or capture is not None:
                _before_apply(node, grads, capture)
            # the node's input gradients; unused outputs of a multi-output node count as zero gradients
            if observed:
                with backward_node(node):
                    input_grads = _apply(node, grads, retain_graph)
            elif len(grads) == 1:
                input_grads = node.apply(grads, retain_graph) if grads[0] is not None else None
            else:
                input_grads = _apply(node, grads, retain_graph)
            if anomaly and input_grads is not None:
                check_gradients(node, input_grads)
            # each input gradient, fitted to its input's shape and dtype, goes to the buffer of its node
            metas = node.input_meta
            count = len(input_grads) if input_grads is not None else 0
            for i, edge in enumerate(node.next_edges):
                if edge is None:
                    continue
                child, nr = edge
                grad = input_grads[i] if i < count else None
                if grad is not None:
                    meta = metas[i]
                    if meta is not None and (grad._data.shape != meta[0] or grad._dtype is not meta[1]
                                             or grad._device is not meta[2]):
                        grad = _fit(grad, meta)
                    slots = buffers.get(child)
                    if slots is None:
                        if child.num_outputs == 1:
                            buffers[child] = [grad]
                        else:
                            buffers[child] = slots = [None] * child.num_outputs
                            slots[nr] = grad
                    else:
                        slots[nr] = grad if slots[nr] is None else add(slots[nr], grad)
                left = counts[child] - 1
                counts[child] = left
                if not left:
                    ready.append(child)
    finally:
        state.enabled, state.inference = previous


def _before_apply(node, grads: list, capture) -> None:
    """Tensor hooks of the node's outputs, and gradients that ``autograd.grad`` asked for at them."""
    if node.pre_hooks:
        for nr, hooks in node.pre_hooks.items():
            if grads[nr] is not None:
                grads[nr] = _run_hooks(hooks, grads[nr])
    if capture is not None:
        for nr, grad in enumerate(grads):
            if (node, nr) in capture and grad is not None:
                capture[(node, nr)] = _add(capture[(node, nr)], grad)


def _reach_leaf(node, grads: list, capture, create_graph: bool, handed: set) -> None:
    if node.pre_hooks or capture is not None:
        _before_apply(node, grads, capture)
    if capture is None:
        _accumulate(node, grads[0], create_graph, handed)


def _apply(node, grads: list, retain_graph: bool) -> list:
    """The node's input gradients; unused outputs of a multi-output node count as zero gradients."""
    if len(grads) == 1:
        if grads[0] is None:
            return None
    else:
        missing = [g is None for g in grads]
        if all(missing):
            return None
        if any(missing):
            grads = [g if g is not None else _zeros_for(node, nr, grads) for nr, g in enumerate(grads)]
    return node.apply(grads, retain_graph)


def _zeros_for(node, nr, grads):
    """A zero gradient for an output of a multi-output node that nothing downstream used."""
    shape, dtype, device = node.output_meta[nr]
    return F.zeros(shape, dtype=dtype, device=device)


def _accumulate(node: AccumulateGrad, grad, create_graph: bool, handed: set) -> None:
    """``leaf.grad += grad``. A fresh ``.grad`` never shares memory with another leaf's, because
    optimizers and clipping update gradients in place."""
    if grad is None:
        return
    grad = _run_hooks(node.hooks, grad)
    leaf = node.variable
    if leaf is None:
        return  # freed: nothing can read its gradient
    if leaf.grad is None:
        if not create_graph and (grad._base is not None or id(grad) in handed or grad.requires_grad):
            grad = F.clone(grad.detach())
        handed.add(id(grad))
        leaf.grad = grad
    else:
        leaf.grad = F.add(leaf.grad, grad)
    for hook in node.post_hooks:
        hook(leaf)
