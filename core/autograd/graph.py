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
_GRAD, _GRADS = 0, 1  # positions of the incoming gradient(s) among a derivative's available arguments
_RESULT, _RESULTS = -1, -2  # sources of saved values that are outputs rather than inputs
_PLAIN_VALUES = frozenset({int, float, bool, str, type(None)})  # attributes saved as they are


class NodePlan:
    """What a node of one op saves and runs, for one pattern of inputs needing gradients.

    Worked out once per (op, pattern) and shared by every node with that pattern, so that recording,
    which happens on every differentiable op call, only copies values. A derivative is one function for
    every input, or a dict with one function per input name (as in PyTorch's derivatives.yaml), so that
    only what the inputs needing gradients use gets saved. ``wants`` are the saved names, ``sources``
    where each comes from (a parameter position, or the outputs), and ``calls`` the functions to run,
    one per tensor parameter (None where no gradient is needed), each with the positions of its
    arguments in ``[grad, grads, *saved]``.
    """

    __slots__ = ("wants", "sources", "calls", "single", "derivative")

    def __init__(self, op, needed: dict | None) -> None:
        self.derivative = op.derivative
        if needed is None:  # one function for every input
            functions = [op.derivative]
        else:
            functions = list(needed.values())
        wants = tuple(dict.fromkeys(n for fn in functions for n in derivative_inputs(fn)
                                    if n not in ("grad", "grads")))
        sources = []
        for name in wants:
            at = op.param_index.get(name)
            sources.append(at if at is not None else _RESULT if name == "result" else
                           _RESULTS if name == "results" else None)
        self.wants = wants
        self.sources = tuple(sources)
        position = {"grad": _GRAD, "grads": _GRADS, **{name: 2 + i for i, name in enumerate(wants)}}

        def arguments(fn):
            return fn, tuple(position[n] for n in derivative_inputs(fn))
        self.single = needed is None
        if needed is None:
            self.calls = (arguments(op.derivative),)
        else:
            self.calls = tuple(arguments(needed[name]) if name in needed else None
                               for name in op.tensor_param_names)


def _needed_formulas(op, mask: tuple, list_sizes: tuple) -> dict:
    """The per-input derivative functions of ``op`` that the inputs needing gradients (``mask``, one flag per
    flat input: a list parameter takes as many as its ``list_sizes`` entry says) call for."""
    if not list_sizes:
        return {p: op.derivative[p] for p, needs in zip(op.tensor_param_names, mask)
                if needs and p in op.derivative}
    needed = {}
    position = 0
    sizes = iter(list_sizes)
    for i in op.tensor_positions:
        p = op.params[i]
        width = next(sizes) if p.type in _LIST_TYPES else 1
        if p.name in op.derivative and any(mask[position:position + width]):
            needed[p.name] = op.derivative[p.name]
        position += width
    return needed


def node_plan(op, mask: tuple, list_sizes: tuple) -> NodePlan:
    """The cached NodePlan of ``op`` for inputs needing gradients as in ``mask``."""
    key = (mask, list_sizes) if list_sizes else mask
    plan = op.node_plans.get(key)
    if plan is None or plan.derivative is not op.derivative:  # new, or the op's derivative was replaced
        needed = None if callable(op.derivative) else _needed_formulas(op, mask, list_sizes)
        plan = NodePlan(op, needed)
        if len(op.node_plans) < 256:
            op.node_plans[key] = plan
    return plan


class OpNode(Node):
    """The backward of one op call: runs the op's declared derivative on the saved values.

    Saved inputs are kept as the tensors themselves with the version each had (``versions``; -1 for a
    value that is not a tensor); outputs and lists go through ``saved.save``, which breaks the reference
    cycle an output would make (``versions`` None)."""

    __slots__ = ("op", "plan", "saved", "versions", "input_meta", "output_meta", "released", "list_sizes")

    def __init__(self, op, values, outputs, tensor_inputs) -> None:
        # Recording happens on every differentiable op call, so this is written for speed.
        edges, metas, mask = [], [], []
        for t in tensor_inputs:
            if t is None or not t.requires_grad:
                edges.append(None)
                metas.append(None)
                mask.append(False)
                continue
            fn = t.grad_fn
            if fn is not None:
                edges.append((fn, t._output_nr))
            else:
                ref = t._accumulator
                sink = ref() if ref is not None else None
                edges.append((sink if sink is not None else accumulator(t), 0))
            metas.append((t._data.shape, t._dtype, t._device))
            mask.append(True)
        self.next_edges = edges
        self.num_outputs = len(outputs)
        self.pre_hooks = None
        self.op = op
        self.input_meta = metas
        self.released = False
        if op.list_positions:
            self.list_sizes = list_sizes = tuple(len(values[i]) for i in op.list_positions)
            plan = node_plan(op, tuple(mask), list_sizes)
        else:
            self.list_sizes = ()
            plan = op.node_plans.get(tuple(mask))
            if plan is None or plan.derivative is not op.derivative:
                plan = node_plan(op, tuple(mask), ())
        self.plan = plan
        self.output_meta = tuple((t._data.shape, t._dtype, t._device) for t in outputs) \
            if len(outputs) > 1 else None
        saved, versions = [], []
        for at in plan.sources:
            if at is not None and at >= 0:
                value = values[at]
                if value.__class__ is Tensor:
                    saved.append(value)
                    versions.append(value._version[0])
                elif value.__class__ in _PLAIN_VALUES:
                    saved.append(value)
                    versions.append(-1)
                else:
                    saved.append(saving.save(value))
                    versions.append(None)
            elif at is None:
                saved.append(None)
                versions.append(-1)
            else:
                saved.append(saving.save(outputs[0] if at == _RESULT and len(outputs) == 1 else list(outputs),
                                         self))
                versions.append(None)
        self.saved = saved
        self.versions = versions

    @property
    def forward_op(self) -> str:
        return self.op.name

    def name(self) -> str:
        return "".join(part.capitalize() for part in self.op.name.split("_")) + "Backward"

    def _unpacked(self) -> list:
        """The saved values, checked against in-place changes made since they were saved."""
        out = []
        op_name = self.op.name
        for value, version, name in zip(self.saved, self.versions, self.plan.wants):
            if version is None:
                value = saving.unpack(value, op_name, name)
            elif version >= 0 and value._version[0] != version:
                raise RuntimeError(saving.modified_message(f"the saved '{name}'", op_name, value._version[0],
                                                           version))
            out.append(value)
        return out

    def apply(self, grads, retain_graph):
        if self.released:
            raise RuntimeError(_FREED.format(name=self.name()))
        available = [grads[0], grads]
        if self.saved:
            available += self._unpacked()
        plan = self.plan
        if plan.single:
            fn, at = plan.calls[0]
            out = fn(*[available[i] for i in at])
        else:
            out = [None if call is None else call[0](*[available[i] for i in call[1]]) for call in plan.calls]
        if not retain_graph:
            self.saved = None
            self.released = True
        if out.__class__ is not tuple and out.__class__ is not list:
            if not isinstance(out, (tuple, list)):
                return (out,)
        return _flatten_list_grads(out, self.op, self.list_sizes) if self.list_sizes else out


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
    """The fast path's recording: one output, operands known to be tensors or None, op differentiable.
    Checks the grad mode itself, which saves the fast path a call."""
    if not state.enabled:
        return
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
