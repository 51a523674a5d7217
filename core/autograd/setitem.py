"""``x[index] = value`` when gradients are involved: the write happens in place, and x's history
becomes a node that routes the gradient of the overwritten region to ``value`` and the rest to old x."""
from __future__ import annotations

from ..dispatch.ops import F
from .graph import Node, edge_of
from .grad_mode import no_grad, state


class SetitemBackward(Node):
    __slots__ = ("index", "input_meta", "getitem", "setitem")

    def apply(self, grads, retain_graph):
        grad = grads[0]
        value_grad = self.getitem(grad, self.index)
        remaining = F.clone(grad)
        with no_grad():
            self.setitem(remaining, self.index, 0)
        return [remaining, value_grad]


def needs_tracking(x, value) -> bool:
    return state.enabled and (x.requires_grad or getattr(value, "requires_grad", False))


def tracked_setitem(x, index, value, getitem, setitem) -> None:
    """Write in place, then make x the output of a SetitemBackward node."""
    if x.grad_fn is None and x.requires_grad:
        raise RuntimeError(f"setitem: a leaf tensor that requires grad (shape {tuple(x.shape)}) is being used in "
                           f"an in-place operation; wrap the update in ember.no_grad()")
    if x._base is not None:
        raise RuntimeError(f"setitem: assigning into a view (shape {tuple(x.shape)}) of a tensor that requires "
                           f"grad is not supported; assign on the base tensor itself")
    value_is_tensor = hasattr(value, "_data")
    edges = (edge_of(x), edge_of(value) if value_is_tensor else None)
    with no_grad():
        setitem(x, index, value)
    node = SetitemBackward(edges, 1, "setitem")
    node.index, node.getitem, node.setitem = index, getitem, setitem
    node.input_meta = ((tuple(x.shape), x._dtype, x._device),
                       (tuple(value.shape), value._dtype, value._device) if value_is_tensor else None)
    x.requires_grad = True
    x.grad_fn = node
    x._output_nr = 0
