"""Graph nodes and recording: every differentiable op call leaves one node behind.

A node knows, for each differentiable input, the edge its gradient flows along: the input's own
node (with the output number), an ``AccumulateGrad`` for a leaf, or None. The derivative it runs
is the op's schema entry ``derivative``: a function whose parameter names say what to save.
"""
from __future__ import annotations

import inspect
import weakref

from ..dispatch.errors import EmberError
from ..tensor import Tensor
from . import saved as saving
from .saved import SavedTensor
from .grad_mode import state

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
          "a second time. (node: {name})")


class Node:
    """Base of graph nodes. ``next_functions`` mirrors PyTorch: ((node, output_nr) or (None, 0), ...)."""

    __slots__ = ("next_edges", "pre_hooks", "num_outputs", "forward_op", "__weakref__")

    def __init__(self, next_edges, num_outputs: int = 1, forward_op: str = "") -> None:
        self.next_edges = next_edges
        self.num_outputs = num_outputs
        self.pre_hooks = None  # output_nr -> [hook]: tensor hooks of non-leaf outputs
        self.forward_op = forward_op

    @property
    def next_functions(self):
        return tuple((edge if edge is not None else (None, 0)) for edge in self.next_edges)

    def name(self) -> str:
        return type(self).__name__

    def register_prehook(self, output_nr: int, hook) -> None:
        if self.pre_hooks is None:
            self.pre_hooks = {}
        self.pre_hooks.setdefault(output_nr, []).append(hook)

    def apply(self, grads: list, retain_graph: bool) -> list:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.name()}>"


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds arriving gradients into ``leaf.grad``."""

    __slots__ = ("variable", "hooks")

    def __init__(self, variable) -> None:
        super().__init__((), 1, "leaf")
        self.variable = variable
        self.hooks = []

    def apply(self, grads, retain_graph):
        raise AssertionError("AccumulateGrad is handled by the engine")


def accumulator(leaf) -> AccumulateGrad:
    """The one AccumulateGrad of a leaf (the leaf keeps it weakly, the graph strongly)."""
    ref = leaf._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._accumulator = weakref.ref(node)
    return node


def edge_of(t):
    """Where the gradient of tensor ``t`` goes."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t.requires_grad:
        return (accumulator(t), 0)
    return None


def derivative_inputs(derivative) -> tuple[str, ...]:
    """The names a derivative function asks for, cached on the function."""
    names = getattr(derivative, "_wants", None)
    if names is None:
        names = tuple(inspect.signature(derivative).parameters)
        derivative._wants = names
    return names


_LIST_TYPES = ("Tensor[]", "Index?[]")  # parameter types whose value is a list of graph inputs


def _formulas(op, inputs, list_sizes: tuple):
    """A derivative is one function for every input, or a dict with one function per input name (as in
    PyTorch's derivatives.yaml), so that only what the inputs needing gradients use gets saved.
    ``inputs`` are flat: a list parameter takes as many of them as its ``list_sizes`` entry says."""
    if callable(op.derivative):
        return None, derivative_inputs(op.derivative)
    if not list_sizes and len(op.tensor_positions) == len(inputs):  # no list parameters: one input each
        needed = {p: op.derivative[p] for p, t in zip(op.tensor_param_names, inputs)
                  if t is not None and t.requires_grad and p in op.derivative}
        return needed, tuple(dict.fromkeys(n for fn in needed.values() for n in derivative_inputs(fn)))
    needed = {}
    position = 0
    sizes = iter(list_sizes)
    for i in op.tensor_positions:
        p = op.params[i]
        width = next(sizes) if p.type in _LIST_TYPES else 1
        items = inputs[position:position + width]
        position += width
        if p.name in op.derivative and any(t is not None and t.requires_grad for t in items):
            needed[p.name] = op.derivative[p.name]
    wants = tuple(dict.fromkeys(name for fn in needed.values() for name in derivative_inputs(fn)))
    return needed, wants


class OpNode(Node):
    """The backward of one op call: runs the op's declared derivative on the saved values."""

    __slots__ = ("op", "saved", "input_meta", "output_meta", "released", "formulas", "list_sizes")

    def __init__(self, op, values, outputs, tensor_inputs) -> None:
        # Recording happens on every differentiable op call, so this is written for speed.
        edges, metas = [], []
        for t in tensor_inputs:
            if t is None:
                edges.append(None)
                metas.append(None)
                continue
            fn = t.grad_fn
            edges.append((fn, t._output_nr) if fn is not None else
                         ((accumulator(t), 0) if t.requires_grad else None))
            metas.append((t._data.shape, t._dtype, t._device))
        self.next_edges = edges
        self.num_outputs = len(outputs)
        self.pre_hooks = None
        self.forward_op = op.name
        self.op = op
        self.input_meta = metas
        self.output_meta = tuple((t._data.shape, t._dtype, t._device) for t in outputs) \
            if len(outputs) > 1 else None
        self.released = False
        self.list_sizes = tuple(len(values[i]) for i in op.list_positions) if op.list_positions else ()
        self.formulas, wants = _formulas(op, tensor_inputs, self.list_sizes)
        index = op.param_index
        saved = {}
        for name in wants:
            if name in ("grad", "grads"):
                continue
            at = index.get(name)
            if at is not None:
                value = values[at]
                saved[name] = SavedTensor(value) if value.__class__ is Tensor else saving.save(value)
            elif name == "result":
                saved[name] = saving.save(outputs[0] if len(outputs) == 1 else list(outputs), self)
            elif name == "results":
                saved[name] = saving.save(list(outputs), self)
        self.saved = saved

    def name(self) -> str:
        return "".join(part.capitalize() for part in self.op.name.split("_")) + "Backward"

    def apply(self, grads, retain_graph):
        if self.released:
            raise RuntimeError(_FREED.format(name=self.name()))
        available = {"grad": grads[0], "grads": grads}
        op_name = self.op.name
        for name, value in self.saved.items():
            available[name] = saving.unpack(value, op_name, name)
        if self.formulas is None:
            fn = self.op.derivative
            out = fn(**{name: available[name] for name in fn._wants})
        else:
            out = tuple(self._per_input(p.name, available) for p in self.op.params if p.is_tensor)
        if not retain_graph:
            self.saved = None
            self.released = True
        if not isinstance(out, (tuple, list)):
            out = (out,)
        return _flatten_list_grads(out, self.op, self.list_sizes)


    def _per_input(self, name, available):
        fn = self.formulas.get(name)
        return None if fn is None else fn(**{n: available[n] for n in fn._wants})


def _flatten_list_grads(out, op, list_sizes: tuple):
    """Grads come back per tensor parameter; a list parameter returns a list, or None for all of its
    ``list_sizes`` elements: flatten them, so that each gradient lines up with its graph edge."""
    if not list_sizes:
        return list(out)
    flat = []
    sizes = iter(list_sizes)
    for p, g in zip((p for p in op.params if p.is_tensor), out):
        if p.type in _LIST_TYPES:
            size = next(sizes)
            flat.extend(g if g is not None else [None] * size)
        else:
            flat.append(g)
    return flat


def tensor_inputs_of(op, values):
    """The tensor operands in parameter order (lists expanded), None where a slot holds no tensor."""
    found = []
    for i in op.tensor_positions:
        v = values[i]
        if v.__class__ is Tensor:
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(x if isinstance(x, Tensor) else None for x in v)
        else:
            found.append(v if isinstance(v, Tensor) else None)
    return found


def record_elementwise(op, values, inputs, out) -> None:
    """The fast path's recording: one output, operands known to be tensors or None, op differentiable."""
    node = OpNode(op, values, (out,), inputs)
    if out._dtype.is_floating_point:
        out.requires_grad = True
        out.grad_fn = node


def record(op, values, outputs) -> None:
    """Called by the dispatcher after a kernel ran with grad mode on: attach a node when needed."""
    inputs = tensor_inputs_of(op, values)
    if not any(t is not None and t.requires_grad for t in inputs):
        return
    if not op.differentiable:
        return
    if op.derivative is None:
        raise EmberError(f"{op.name}: no derivative is declared for this op, so it cannot be differentiated; "
                         f"inputs: {', '.join(str(tuple(t.shape)) for t in inputs if t is not None)}")
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    node = OpNode(op, values, outs, inputs)
    for nr, out in enumerate(outs):
        if out._dtype.is_floating_point:
            out.requires_grad = True
            out.grad_fn = node
            out._output_nr = nr
    if state.anomaly:
        from .anomaly import remember_forward
        remember_forward(node)


def check_mutation(op, values) -> None:
    """Before an op writes into its first input: refuse what the graph could not represent.

    A leaf that requires grad cannot change in place (PyTorch's rule), and a write through a view
    would leave the base tensor's history stale, so it is refused too instead of giving wrong gradients.
    """
    if not state.enabled:
        return
    target = values[op.tensor_positions[0]]
    if target.requires_grad and target.grad_fn is None:
        raise RuntimeError(f"{op.name}: a leaf tensor that requires grad (shape {tuple(target.shape)}) is being "
                           f"used in an in-place operation; wrap the update in ember.no_grad()")
    sources = [values[i] for i in op.tensor_positions[1:]]
    writes_history = target.requires_grad or any(getattr(s, "requires_grad", False) for s in sources)
    if target._base is not None and writes_history:
        raise RuntimeError(f"{op.name}: in-place writes through a view of a tensor that requires grad are not "
                           f"supported (view of shape {tuple(target.shape)}); assign on the base tensor itself "
                           f"(x[index] = value) or use out-of-place ops such as ember.where or ember.cat")
