"""Graph nodes and recording: every differentiable op call leaves one node behind.

A node knows, for each differentiable input, the edge its gradient flows along: the input's own
node (with the output number), an ``AccumulateGrad`` for a leaf, or None. The derivative it runs
is the op's schema entry ``derivative``: a function whose parameter names say what to save.
"""
from __future__ import annotations

import inspect
import weakref

from ..tensor import Tensor
from . import saved as saving
from .grad_mode import state
from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

# public, as torch.autograd.graph's; the rest is the recording machinery the engine uses
__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]

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
    """The sink of a leaf tensor: adds arriving gradients into ``leaf.grad``.

    The leaf owns its sink, which refers back to it weakly: the sink lives as long as the leaf, so it is
    made once per leaf rather than once per forward pass, and no reference cycle keeps either alive. A
    gradient arriving after the leaf is gone has nowhere to go and is dropped (its hooks still run)."""

    __slots__ = ("_variable", "hooks", "post_hooks")

    def __init__(self, variable) -> None:
        super().__init__((), 1, "leaf")
        self._variable = weakref.ref(variable)
        self.hooks = []
        self.post_hooks = []  # hook(leaf) after ``leaf.grad`` is updated (register_post_accumulate_grad_hook)

    @property
    def variable(self):
        """The leaf tensor, or None once it has been freed."""
        return self._variable()

    def apply(self, grads, retain_graph):
        raise AssertionError("AccumulateGrad is handled by the engine")


def accumulator(leaf) -> AccumulateGrad:
    """The one AccumulateGrad of a leaf, made on first use and kept by the leaf."""
    node = leaf._accumulator
    if node is None:
        node = leaf._accumulator = AccumulateGrad(leaf)
    return node


def _edge_to(t) -> tuple:
    """Where the gradient of ``t``, which requires grad, goes: its node, or its leaf's sink."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    sink = t._accumulator
    return (sink if sink is not None else accumulator(t), 0)


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


def _mask_flags(mask: int, count: int) -> tuple:
    """A bit mask of inputs needing gradients as one flag per input."""
    return tuple(bool(mask >> i & 1) for i in range(count))


def node_plan(op, plans: dict, mask: tuple, list_sizes: tuple, key=None) -> NodePlan:
    """The NodePlan of ``op`` for inputs needing gradients as in ``mask`` (one flag per flat input), cached in
    ``plans`` (the call plan's ``node_plans``) under ``key``."""
    if key is None:
        key = (mask, list_sizes)
    plan = plans.get(key)
    if plan is None or plan.derivative is not op.derivative:  # new, or the op's derivative was replaced
        needed = None if callable(op.derivative) else _needed_formulas(op, mask, list_sizes)
        plan = NodePlan(op, needed)
        if len(plans) < 64:
            plans[key] = plan
    return plan


class OpNode(Node):
    """The backward of one op call: runs the op's declared derivative on the saved values.

    Saved inputs are kept as the tensors themselves with the version each had (``versions``; -1 for a
    value that is not a tensor); outputs and lists go through ``saved.save``, which breaks the reference
    cycle an output would make (``versions`` None)."""

    __slots__ = ("op", "plan", "saved", "versions", "input_meta", "output_meta", "released", "list_sizes")

    def __init__(self, op, values, outputs, node_plans: dict) -> None:
        # Recording happens on every differentiable op call, so this is written for speed: one and two inputs
        # (most calls: x * y, x.exp(), x.sum()) unrolled.
        leading = op.leading_tensors
        if leading == 2 or leading == 1:
            a = values[0]
            if (a.__class__ is Tensor or isinstance(a, Tensor)) and a.requires_grad:
                edges, metas, mask = [_edge_to(a)], [(a._data.shape, a._dtype, a._device)], 1  # bit i: input i
            else:
                edges, metas, mask = [None], [None], 0
            if leading == 2:
                b = values[1]
                if (b.__class__ is Tensor or isinstance(b, Tensor)) and b.requires_grad:
                    edges.append(_edge_to(b))
                    metas.append((b._data.shape, b._dtype, b._device))
                    mask |= 2
                else:
                    edges.append(None)
                    metas.append(None)
        else:
            edges, metas = [], []
            mask = 0
            bit = 1
            for t in values[:leading] if leading is not None else _graph_inputs(op, values):
                if (t.__class__ is Tensor or isinstance(t, Tensor)) and t.requires_grad:
                    edges.append(_edge_to(t))
                    metas.append((t._data.shape, t._dtype, t._device))
                    mask |= bit
                else:
                    edges.append(None)
                    metas.append(None)
                bit <<= 1
        self.next_edges = edges
        self.num_outputs = count = len(outputs)
        self.pre_hooks = None
        self.op = op
        self.input_meta = metas
        self.released = False
        if op.list_positions:
            self.list_sizes = list_sizes = tuple(len(values[i]) for i in op.list_positions)
            plan = node_plan(op, node_plans, _mask_flags(mask, len(edges)), list_sizes)
        else:
            self.list_sizes = ()
            plan = node_plans.get(mask)
            if plan is None or plan.derivative is not op.derivative:
                plan = node_plan(op, node_plans, _mask_flags(mask, len(edges)), (), mask)
        self.plan = plan
        self.output_meta = tuple((t._data.shape, t._dtype, t._device) for t in outputs) if count > 1 else None
        saved, versions = [], []
        for at in plan.sources:
            if at is not None and at >= 0:
                value = values[at]
                if value.__class__ is Tensor:  # the usual case: an input tensor, kept with its version
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
        if saving.hook_stack:
            for i, (value, version) in enumerate(zip(saved, versions)):
                saved[i], versions[i] = saving.hooked(value, version)
        self.saved = saved
        self.versions = versions

    @property
    def forward_op(self) -> str:
        return self.op.name

    def name(self) -> str:  # a custom op's "mylib::bias_gelu" as MylibBiasGeluBackward
        return "".join(part.capitalize() for part in self.op.name.replace("::", "_").split("_")) + "Backward"

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
        out = _run_calls(self.plan, available)
        if not retain_graph:
            self.saved = None
            self.released = True
        if out.__class__ is not tuple and out.__class__ is not list:
            if not isinstance(out, (tuple, list)):
                return (out,)
        return _flatten_list_grads(out, self.op, self.list_sizes) if self.list_sizes else out


def run_derivative(op, values: list, outputs: tuple, grads: list, mask: tuple) -> list:
    """The op's declared derivative for one call, without a node: per flat tensor input (``mask``: which want
    one), its vector-Jacobian product with ``grads`` (one per output) before it is fitted to the input's shape.
    Forward AD's derived JVP runs it on a gradient that requires grad, and differentiates the result."""
    list_sizes = tuple(len(values[i]) for i in op.list_positions)
    plan = node_plan(op, {}, mask, list_sizes)
    available = [grads[0], grads]
    for at in plan.sources:
        if at is not None and at >= 0:
            available.append(values[at])
        elif at is None:
            available.append(None)
        else:
            available.append(outputs[0] if at == _RESULT and len(outputs) == 1 else list(outputs))
    out = _run_calls(plan, available)
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return _flatten_list_grads(out, op, list_sizes) if list_sizes else list(out)


def _run_calls(plan: NodePlan, available: list):
    """The derivative functions of ``plan`` on ``[grad, grads, *saved]``: one result, or one per tensor input."""
    if plan.single:
        fn, at = plan.calls[0]
        return fn(*[available[i] for i in at])
    return [None if call is None else call[0](*[available[i] for i in call[1]]) for call in plan.calls]


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


def _graph_inputs(op, values):
    """The values at the op's tensor positions, lists expanded (non-tensors are skipped by the caller)."""
    if op.list_positions:
        return tensor_inputs_of(op, values)
    return [values[i] for i in op.tensor_positions]


def tensor_inputs_of(op, values):
    """The tensor operands in parameter order (lists expanded), None where a slot holds no tensor."""
    if not op.list_positions:
        return [v if isinstance(v, Tensor) else None for v in map(values.__getitem__, op.tensor_positions)]
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


def record(call_plan, values, outputs) -> None:
    """The one recording entry point: the executor calls it after a call whose plan records (grad mode on,
    an input needs grad, the op is differentiable); it attaches one node to the floating and complex outputs."""
    op = call_plan.op
    if outputs.__class__ is Tensor:
        node = OpNode(op, values, (outputs,), call_plan.node_plans)
        if outputs._dtype.is_inexact:
            outputs.requires_grad = True
            outputs.grad_fn = node
        return
    node = OpNode(op, values, outputs, call_plan.node_plans)
    for nr, out in enumerate(outputs):
        if out._dtype.is_inexact:
            out.requires_grad = True
            out.grad_fn = node
            out._output_nr = nr


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
