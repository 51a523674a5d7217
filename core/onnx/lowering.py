"""From a captured graph to ONNX: inputs, initializers, one lowering per op call, outputs.

Each ``OpNode`` is written by its op's ``onnx`` declaration (see ``builder``). Tensors the model reads as
they are become initializers named by their ``state_dict`` key (parameters and buffers) or ``const_*``; with
``export_params=False`` parameters and buffers are graph inputs instead, as in PyTorch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compiler.graph import Graph, OpNode, Value, leaves
from ..dispatch.schema.dtypes import bool_, float32, int64
from .builder import GraphBuilder, value_info
from ..export.dims import SymbolicSize
from .errors import OnnxExporterError, UnsupportedOperatorError
from ..export.symbolic import SymbolicForms


@dataclass
class Naming:
    """What the caller chose: input names by arg path, output names in order, labels of dynamic axes."""
    inputs: dict  # arg path -> name (every tensor argument, in order)
    outputs: list
    input_axes: dict  # input name -> {axis: symbol}
    output_axes: dict  # output name -> {axis: label}
    parameter_names: dict  # id(tensor) -> state_dict key
    export_params: bool
    keep_initializers_as_inputs: bool


def lower(graph: Graph, forms: SymbolicForms, naming: Naming, opset: int, scopes: dict,
          argument_shapes: dict) -> GraphBuilder:
    """Write ``graph`` into a new ``GraphBuilder``; ``argument_shapes`` maps each input name to (shape, dtype)."""
    g = GraphBuilder(opset)
    env: dict[int, str] = {}  # value slot -> ONNX name
    for path, name in naming.inputs.items():
        shape, dtype = argument_shapes[name]
        _refuse_complex(f"the model's input '{name}'", dtype)
        axes = naming.input_axes.get(name, {})
        g.inputs.append(value_info(name, dtype, [axes.get(i, n) for i, n in enumerate(shape)]))
    by_path = {path: name for path, name in naming.inputs.items()}
    for symbol, (path, axis) in forms.sources.items():
        g.symbol_sources[symbol] = (by_path[path], axis)
    for entry in graph.inputs:
        value = entry.value
        if entry.kind == "arg":
            name = by_path[entry.where]
        elif entry.kind == "object":
            name = _read_as_is(g, entry.where, value, naming)
        else:
            raise OnnxExporterError("ember.onnx.export: the model reads a gradient, which has no ONNX form")
        env[value.slot] = name
        g.known[name] = (forms.shapes.get(value.slot, value.shape), value.dtype)
    for index, step in enumerate(graph.steps):
        _lower_node(g, step, forms.node_values[index], env, forms, scopes.get(id(step), ""))
    _write_outputs(g, graph, env, forms, naming)
    return g


def _refuse_complex(what: str, dtype) -> None:
    """ONNX has COMPLEX64/COMPLEX128 tensor types but almost no operator accepts them, so a graph computing in
    complex would be invalid: refused, naming where the complex values met the exporter."""
    if dtype is not None and dtype.is_complex:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: {what}: {dtype.name} tensors cannot be exported, since ONNX operators do not "
            f"accept complex tensors (keep complex numbers as real pairs, e.g. with ember.view_as_real, outside "
            f"the exported model)")


def _read_as_is(g: GraphBuilder, tensor, value: Value, naming: Naming) -> str:
    """An initializer (or, for parameters with ``export_params=False``, a graph input) for a tensor the model
    reads as it is."""
    key = naming.parameter_names.get(id(tensor))
    if key is not None and (not naming.export_params or naming.keep_initializers_as_inputs):
        g.inputs.append(value_info(key, value.dtype, value.shape))
        if not naming.export_params:
            return key
    array = tensor.detach().cpu().numpy() if hasattr(tensor, "detach") else np.asarray(tensor)
    name = key if key is not None else g.fresh("const")
    g.add_initializer(name, np.array(array, copy=True))
    return name


def _lower_node(g: GraphBuilder, step: OpNode, values: list, env: dict, forms: SymbolicForms, scope: str) -> None:
    op = step.op
    place = f"module '{scope}'" if scope else "the model's own forward"
    g.op_name = f"{op.name} (in {place})"
    g.scope = "/" + scope.replace(".", "/") if scope else ""
    g.compute = step.plan.compute
    g.out_dtypes = tuple(v.dtype for v in step.outputs)
    for dtype in (g.compute, *g.out_dtypes):
        _refuse_complex(f"op '{op.name}' (in {place})", dtype)
    lowering = op.onnx
    if lowering is None:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: op '{op.name}' has no ONNX lowering (met in {place}); declare one with "
            f"onnx=... in its schema declaration")
    bound = _bind(g, step, values, env)
    if isinstance(lowering, str):
        if op.attr_positions:
            raise UnsupportedOperatorError(f"ember.onnx.export: {g.op_name}: a lowering by name needs an op "
                                           f"without attributes")
        outputs = g.op(lowering, *(bound[op.params[i].name] for i in op.tensor_positions))
    else:
        outputs = lowering(g, **bound)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    if len(outputs) != len(step.outputs):
        raise OnnxExporterError(f"ember.onnx.export: {g.op_name}: the lowering made {len(outputs)} outputs, the op "
                                f"has {len(step.outputs)}")
    for value, name in zip(step.outputs, outputs):
        env[value.slot] = name
        g.known[name] = (forms.shapes.get(value.slot, value.shape), value.dtype)


def _bind(g: GraphBuilder, step: OpNode, values: list, env: dict) -> dict:
    """The lowering's keywords: tensors as names (cast to the compute dtype where the op promotes), numbers
    among the tensor operands as constants, attributes as they are."""
    op, plan = step.op, step.plan
    compute = plan.compute
    bound = {}
    for position, param in enumerate(op.params):
        value = values[position]
        if not param.is_tensor:
            bound[param.name] = value
            continue
        promoted = param.type in ("Tensor", "Tensor?", "Tensor[]")
        if isinstance(value, (list, tuple)):
            bound[param.name] = [_operand(g, v, env, compute if promoted else None, plan) for v in value]
        else:
            bound[param.name] = _operand(g, value, env, compute if promoted else None, plan)
    return bound


def _operand(g: GraphBuilder, value, env: dict, compute, plan) -> str | None:
    if value is None:
        return None
    if isinstance(value, Value):
        name = env[value.slot]
        if compute is not None and value.dtype is not compute:
            cast = g.cast(name, compute)
            g.known[cast] = (g.known[name][0], compute)
            return cast
        return name
    dtype = compute if compute is not None else _number_dtype(value, plan)
    if isinstance(value, SymbolicSize):
        name = g.scalar(value, dtype)
    else:
        name = g.const(np.asarray(value), dtype)
    g.known[name] = ((), dtype)
    return name


def _number_dtype(value, plan):
    out = plan.out if not isinstance(plan.out, tuple) else plan.out[0]
    if isinstance(value, bool):
        return bool_
    if isinstance(value, (int, SymbolicSize)):
        return out if out is not None and out.kind == "int" else int64
    return out if out is not None and out.is_floating_point else float32


def _write_outputs(g: GraphBuilder, graph: Graph, env: dict, forms: SymbolicForms, naming: Naming) -> None:
    results = [leaf for leaf in leaves(graph.result) if isinstance(leaf, Value)]
    if len(results) != len(naming.outputs):
        raise OnnxExporterError(f"ember.onnx.export: the model returns {len(results)} tensors but "
                                f"{len(naming.outputs)} output names were given")
    taken = {i.name for i in g.inputs} | set(g.initializers)
    for value, name in zip(results, naming.outputs):
        produced = env[value.slot]
        if produced in taken:  # an input, initializer or earlier output returned as it is
            produced = g.op("Identity", produced)
        _rename(g, produced, name)
        env[value.slot] = name
        taken.add(name)
        axes = naming.output_axes.get(name, {})
        shape = forms.shapes.get(value.slot, value.shape)
        g.outputs.append(value_info(name, value.dtype, [axes.get(i, d) for i, d in enumerate(shape)]))


def _rename(g: GraphBuilder, old: str, new: str) -> None:
    """Give the value ``old`` its output name ``new`` everywhere it appears."""
    for node in g.nodes:
        for i, name in enumerate(node.output):
            if name == old:
                node.output[i] = new
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


__all__ = ["lower", "Naming"]
