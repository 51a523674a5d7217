"""``add_graph``: a model's graph, traced by running it once with forward hooks on every module.

Ember has no tracing JIT, so the model runs once (in eval mode, with autograd recording) and hooks on
every submodule watch it. Each call of a leaf module (one without children) becomes a node named by its
module path, ``Net/Linear[fc1]``, whose op is the module's class. Tensors made by plain ops between
modules are followed back through the autograd graph, so those ops become nodes too (``Net/add``, op =
the schema op name) in the scope of the module whose forward ran them. A tensor whose origin the trace
cannot see (made inside forward, or computed from tensors that do not require grad) becomes an
``Untraced`` node: the graph never invents an edge.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.types_pb2 import DataType
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ...autograd.grad_mode import enable_grad
from ...autograd.graph import AccumulateGrad
from ...dispatch.schema.errors import EmberError
from ...nn.modules.module import Module
from ...tensor import Tensor

_IO = "IO Node"
_UNTRACED = ("made inside forward, or computed from tensors that do not require grad: "
             "the ops that produced it are not recorded")
_TF_TYPES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF", "bfloat16": "DT_BFLOAT16",
             "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64",
             "uint8": "DT_UINT8", "bool": "DT_BOOL", "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128"}


@dataclass
class _Node:
    name: str
    op: str
    inputs: list
    outputs: list  # (shape, dtype name) of each output, or None where unknown
    attr: str = ""


@dataclass
class _Call:
    """A module call in progress: its scope, whether it becomes a node, and its input nodes."""
    module: Module
    scope: str
    leaf: bool
    ignored: bool = False
    inputs: list = field(default_factory=list)


def _meta(shape, dtype) -> tuple:
    return tuple(int(d) for d in shape), getattr(dtype, "name", str(dtype))


def _tensor_meta(t: Tensor) -> tuple:
    return _meta(t.shape, t.dtype)


def _tensors(value):
    """The tensors in a (nested) tuple, list or dict, in order."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _cannot(model, why: str) -> EmberError:
    return EmberError(f"add_graph: cannot trace {type(model).__name__}: {why}")


class _Tracer:
    """Builds the node list while the model runs; maps tensors and autograd nodes to graph nodes."""

    def __init__(self, model: Module) -> None:
        self.nodes: list[_Node] = []
        self.names: set[str] = set()
        self.by_tensor: dict[int, str] = {}    # id(tensor) -> node (module outputs, inputs, leaves)
        self.by_grad_fn: dict[int, str] = {}   # id(autograd node) -> node
        self.alive: list = []                  # keeps every keyed object alive, so that ids stay unique
        self.scopes: dict[int, str] = {}       # id(module) -> 'Net/Block[b]/Linear[fc]'
        self.named: dict[int, tuple] = {}      # id(parameter or buffer) -> (node name, op)
        self.calls: list[_Call] = []
        self._scan(model, type(model).__name__)
        self.root = self.scopes[id(model)]

    def _scan(self, module: Module, scope: str) -> None:
        if id(module) in self.scopes:
            return
        self.scopes[id(module)] = scope
        for name, p in module.named_parameters(recurse=False):
            self.named[id(p)] = (f"{scope}/{name}", "Parameter")
        for name, b in module.named_buffers(recurse=False):
            self.named[id(b)] = (f"{scope}/{name}", "Buffer")
        for name, child in module.named_children():
            self._scan(child, f"{scope}/{type(child).__name__}[{name}]")

    # -- nodes -------------------------------------------------------------------------------------
    def add(self, base: str, op: str, inputs: list, outputs: list, attr: str = "") -> str:
        """A new node; a repeated name (a module called twice, a second add) gets '.1', '.2', ..."""
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}.{k}"
        self.names.add(name)
        self.nodes.append(_Node(name, op, inputs, outputs, attr))
        return name

    def _remember(self, key: dict, obj, name: str) -> None:
        key[id(obj)] = name
        self.alive.append(obj)

    def produced(self, t: Tensor, name: str) -> None:
        """``t`` is an output of node ``name``: later consumers connect to it."""
        self._remember(self.by_tensor, t, name)
        if t.grad_fn is not None:
            self._remember(self.by_grad_fn, t.grad_fn, name)

    # -- where a tensor came from -------------------------------------------------------------------
    def resolve(self, t: Tensor, scope: str) -> str:
        """The node that produced ``t``; functional ops on the way are added in ``scope``."""
        if t.grad_fn is not None:  # checked first: an in-place op may have changed what t holds
            return self._from_autograd(t.grad_fn, _tensor_meta(t), scope)
        return self._leaf(t, scope)

    def _leaf(self, t: Tensor, scope: str) -> str:
        """A tensor without history: a known one (input, module output), a parameter or buffer by its
        name, else a new Untraced node."""
        name = self.by_tensor.get(id(t))
        if name is None:
            if id(t) in self.named:
                base, op = self.named[id(t)]
                name = self.add(base, op, [], [_tensor_meta(t)])
            else:
                name = self.add(f"{scope}/untraced", "Untraced", [], [_tensor_meta(t)], _UNTRACED)
            self._remember(self.by_tensor, t, name)
        return name

    @staticmethod
    def _edges(fn) -> tuple[list, int]:
        """The (autograd node, output meta) of each recorded input of ``fn``, and the count of inputs
        that were not recorded (they did not require grad)."""
        metas = getattr(fn, "input_meta", None) or ()
        edges, missing = [], 0
        for i, (next_fn, _) in enumerate(fn.next_functions):
            if next_fn is None:
                missing += 1
                continue
            meta = metas[i] if i < len(metas) and metas[i] is not None else None
            edges.append((next_fn, _meta(meta[0], meta[1]) if meta is not None else None))
        return edges, missing

    def _from_autograd(self, root, meta, scope: str) -> str:
        """Walk back from autograd node ``root`` to known nodes, adding the ops met (iteratively: a
        forward may chain thousands of ops)."""
        stack = [(root, meta, False)]
        while stack:
            fn, meta, expanded = stack.pop()
            if id(fn) in self.by_grad_fn:
                continue
            if isinstance(fn, AccumulateGrad):
                self._remember(self.by_grad_fn, fn, self._leaf(fn.variable, scope))
                continue
            edges, missing = self._edges(fn)
            if not expanded:
                stack.append((fn, meta, True))
                stack.extend((n, m, False) for n, m in reversed(edges) if id(n) not in self.by_grad_fn)
                continue
            op = getattr(fn, "forward_op", "") or fn.name()
            note = f"{missing} input(s) that do not require grad are not drawn" if missing else ""
            inputs = [self.by_grad_fn[id(n)] for n, _ in edges]
            self._remember(self.by_grad_fn, fn, self.add(f"{scope}/{op}", op, inputs, [meta], note))
        return self.by_grad_fn[id(root)]

    # -- hooks ---------------------------------------------------------------------------------------
    def before(self, module: Module, args: tuple) -> None:
        caller = self.calls[-1] if self.calls else None
        if caller is not None and (caller.leaf or caller.ignored):  # inside a leaf: part of its node
            self.calls.append(_Call(module, "", False, ignored=True))
            return
        call = _Call(module, self.scopes[id(module)], leaf=next(iter(module.children()), None) is None)
        call.inputs = [self.resolve(t, caller.scope if caller else self.root) for t in _tensors(args)]
        self.calls.append(call)

    def after(self, module: Module, args: tuple, output) -> None:
        call = self.calls.pop()
        if call.ignored:
            return
        outputs = list(_tensors(output))
        if call.leaf:
            name = self.add(call.scope, type(module).__name__, call.inputs,
                            [_tensor_meta(t) for t in outputs], module.extra_repr())
            for t in outputs:
                self.produced(t, name)
        else:  # ops in its own forward, after its last submodule, belong to its scope
            for t in outputs:
                self.resolve(t, call.scope)


def _inputs(model: Module, input_to_model) -> tuple:
    if input_to_model is None:
        return ()
    values = tuple(input_to_model) if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
    for i, value in enumerate(values):
        if not isinstance(value, Tensor):
            raise _cannot(model, f"input_to_model must be a Tensor or a tuple of Tensors, but input {i} is "
                                 f"a {type(value).__name__}")
    return values


def _input_names(model: Module, count: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input.{i}" for i in range(count)]


def _outputs(model: Module, output) -> list:
    def check(value):
        if isinstance(value, (tuple, list)):
            for item in value:
                check(item)
        elif not isinstance(value, Tensor):
            raise _cannot(model, f"forward returned a {type(value).__name__}; a traced model returns a Tensor "
                                 "or a (nested) tuple or list of Tensors")
    check(output)
    outputs = list(_tensors(output))
    if not outputs:
        raise _cannot(model, "forward returned no tensor")
    return outputs


def _run(model: Module, tracer: _Tracer, inputs: tuple):
    handles = []
    modes = [(m, m.training) for m in model.modules()]
    try:
        for m in model.modules():
            handles.append(m.register_forward_pre_hook(tracer.before))
            handles.append(m.register_forward_hook(tracer.after))
        model.eval()
        with enable_grad():
            return model(*inputs)
    except Exception as error:
        raise _cannot(model, f"its forward raised {type(error).__name__}: {error}") from error
    finally:
        for handle in handles:
            handle.remove()
        for m, training in modes:
            m.training = training


def _attrs(node: _Node) -> dict:
    attrs = {"attr": AttrValue(s=node.attr.encode("utf-8"))}
    if node.outputs and all(meta is not None for meta in node.outputs):
        shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in shape]) for shape, _ in node.outputs]
        types = [DataType.Value(_TF_TYPES.get(dtype, "DT_INVALID")) for _, dtype in node.outputs]
        attrs["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=shapes))
        attrs["_output_types"] = AttrValue(list=AttrValue.ListValue(type=types))
    return attrs


def graph(model: Module, input_to_model=None, verbose: bool = False) -> GraphDef:
    """The ``GraphDef`` of ``model`` on ``input_to_model``: input nodes ``input/<arg>``, one node per
    leaf-module call and per functional op, output nodes ``output/output.<i>``."""
    if not isinstance(model, Module):
        raise EmberError(f"add_graph: model must be an ember.nn.Module, got {type(model).__name__}")
    inputs = _inputs(model, input_to_model)
    tracer = _Tracer(model)
    copies = []
    for name, value in zip(_input_names(model, len(inputs)), inputs):
        # a copy that records autograd, so that functional ops on the input can be followed back
        copy = value.detach().requires_grad_(True) if value.is_floating_point() else value.detach()
        tracer.produced(copy, tracer.add(f"input/{name}", _IO, [], [_tensor_meta(copy)]))
        copies.append(copy)
    outputs = _outputs(model, _run(model, tracer, tuple(copies)))
    for i, t in enumerate(outputs, start=1):
        tracer.add(f"output/output.{i}", _IO, [tracer.resolve(t, tracer.root)], [_tensor_meta(t)])
    if verbose:
        for node in tracer.nodes:
            shapes = ", ".join(str(list(m[0])) if m else "?" for m in node.outputs)
            print(f"{node.name} = {node.op}({', '.join(node.inputs)})  -> {shapes}")
    nodes = [NodeDef(name=n.name, op=n.op, input=n.inputs, attr=_attrs(n)) for n in tracer.nodes]
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
