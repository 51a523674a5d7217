"""Constant folding (``do_constant_folding=True``): nodes whose inputs are all initializers are computed once,
at export, with ONNX's reference evaluator, and replaced by their results (a weight's transpose, a mask
built from constants). Nodes reading a graph input, such as the shape of a dynamic input, stay."""
from __future__ import annotations

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from .builder import GraphBuilder

#: Ops whose result is not a function of their inputs alone.
_NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
               "Bernoulli", "Dropout"}
#: Results larger than this stay computed at run time: folding must not blow the file up.
_MAX_FOLDED_ELEMENTS = 1 << 22


def fold_constants(g: GraphBuilder) -> int:
    """Fold what can be folded in ``g``; returns the number of nodes removed."""
    graph_inputs = {i.name for i in g.inputs}
    constants = {name: array for name, array in g.constant_arrays.items() if name not in graph_inputs}
    kept, folded = [], 0
    for node in g.nodes:
        names = [n for n in node.input if n]
        if node.op_type in _NOT_FOLDED or not all(n in constants for n in names):
            kept.append(node)
            continue
        results = _evaluate(node, {n: constants[n] for n in names}, g.opset)
        if results is None or any(r.size > _MAX_FOLDED_ELEMENTS for r in results):
            kept.append(node)
            continue
        for name, array in zip(node.output, results):
            constants[name] = array
            g.add_initializer(name, array)
        folded += 1
    g.nodes[:] = kept
    _drop_unused_initializers(g)
    return folded


def _evaluate(node, feeds: dict, opset: int):
    graph = helper.make_graph([node], "fold", [helper.make_empty_tensor_value_info(n) for n in feeds],
                              [helper.make_empty_tensor_value_info(o) for o in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        results = ReferenceEvaluator(model).run(None, feeds)
    except Exception:  # noqa: BLE001  an op the reference cannot run here stays in the graph, unfolded
        return None
    return [np.asarray(r) for r in results]


def _drop_unused_initializers(g: GraphBuilder) -> None:
    used = {name for node in g.nodes for name in node.input} | {o.name for o in g.outputs}
    for name in list(g.initializers):
        if name not in used:
            del g.initializers[name]
            g.constant_arrays.pop(name, None)


__all__ = ["fold_constants"]
