"""Which integers of a captured graph follow the dynamic axes (see ``dims``): captures at other sizes, compared.

``follow_axes`` captures the model once more per symbol, with that symbol's axes at another size, and once
with every symbol moved; the captures must be the same program (same ops, same wiring), and every integer
in the op calls and in the values' shapes is fitted to the sizes. Inputs at other sizes are made from the
export's own inputs by repeating or dropping entries along the axis, so token ids and the like stay valid.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..compiler.capture import _paths, at_path
from ..compiler.graph import Graph, Value
from ..dispatch.execution import links
from .dims import NotFitted, Probe, Unfitted, fit, fit_tree, probe_sizes


@dataclass
class SymbolicForms:
    """The graph's integers with ``SymbolicSize``s where they follow an axis: per node (by position in ``steps``) its
    values, and per value slot its shape; ``sources`` maps each symbol to one (input path, axis) holding it."""
    node_values: list = field(default_factory=list)
    shapes: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)


def fixed_forms(graph: Graph) -> SymbolicForms:
    """The forms of a graph without dynamic axes: everything as captured."""
    forms = SymbolicForms()
    forms.node_values = [list(step.values) for step in graph.steps]
    forms.shapes = {v.slot: v.shape for v in _all_values(graph)}
    return forms


def follow_axes(capture: Callable, args: tuple, kwargs: dict, graph: Graph, axes: dict, describe: Callable, *,
                who: str, error: type, ranges: dict | None = None) -> SymbolicForms:
    """``axes`` maps an input's path to ``{axis: symbol}``; ``describe(path)`` names that input for errors;
    ``capture(args, kwargs)`` captures the program again at other sizes; ``ranges`` bounds each symbol's sizes
    (``(low, high)``, high None for none). Errors are ``error``s naming ``who``."""
    sizes: dict = {}
    for path, per_axis in axes.items():
        shape = tuple(at_path((args, kwargs), path).shape)
        for axis, symbol in per_axis.items():
            if axis >= len(shape):
                raise error(f"{who}: dynamic axis {axis} ('{symbol}') of input '{describe(path)}' does not exist: "
                            f"its shape is {shape}")
            if sizes.setdefault(symbol, shape[axis]) != shape[axis]:
                raise error(f"{who}: dynamic axis '{symbol}' has size {sizes[symbol]} in one input and "
                            f"{shape[axis]} in '{describe(path)}'")
    base = Probe(dict(sizes))
    ranges = ranges or {}
    moved = {}
    for s, n in sizes.items():
        low, high = ranges.get(s, (2, None))
        moved[s] = probe_sizes(n, 2, low, high)
        if moved[s] is None:
            raise error(f"{who}: the dynamic dimension '{s}' (size {n} in the example inputs) has no other size in its "
                        f"range [{low}, {'inf' if high is None else high}] to check how the program follows it")
    probes = [base] + [Probe({**sizes, s: moved[s][0]}) for s in sizes] + [
        Probe({s: moved[s][1] for s in sizes})]
    graphs = [graph] + [_capture_at(capture, args, kwargs, axes, p, base, who, error) for p in probes[1:]]
    forms = SymbolicForms(sources={})
    for path, per_axis in axes.items():
        for axis, symbol in per_axis.items():
            forms.sources.setdefault(symbol, (path, axis))
    _check_same_program(graphs, probes, who, error)
    for index, step in enumerate(graph.steps):
        values = []
        for position, value in enumerate(step.values):
            if _holds_value(value):
                values.append(value)
                continue
            where = f"{step.op.name}({step.op.params[position].name}=...)"
            try:
                values.append(fit_tree([g.steps[index].values[position] for g in graphs], probes, where))
            except NotFitted as error:
                raise error(
                    f"{who}: {where}: a value changes with the dynamic axes in a way the exporter "
                    f"cannot write as a function of them ({error}); make it a fixed size or an input") from None
        forms.node_values.append(values)
    by_slot = [{v.slot: v for v in _all_values(g)} for g in graphs]
    for slot in by_slot[0]:
        shapes = [tuple(m[slot].shape) for m in by_slot]
        forms.shapes[slot] = tuple(_fit_size([shape[axis] for shape in shapes], probes, f"{slot}_{axis}")
                                   for axis in range(len(shapes[0])))
    return forms


def _fit_size(sizes: list, probes: list, label: str):
    """One axis of a value's shape: fitted, or ``Unfitted`` where no form matches (a strided convolution's
    output length): that only fails the export if a lowering needs the size itself."""
    try:
        return fit(sizes, probes)
    except NotFitted:
        return Unfitted(f"size_{label}")


def _capture_at(capture: Callable, args, kwargs, axes, probe: Probe, base: Probe, who: str, error: type) -> Graph:
    moved_args, moved_kwargs = _resized(args, kwargs, axes, probe.sizes, base.sizes)
    changes = ", ".join(f"'{s}' {base.sizes[s]} -> {n}" for s, n in probe.sizes.items() if n != base.sizes[s])
    try:
        return capture(moved_args, moved_kwargs)
    except error:
        raise
    except Exception as exc:  # noqa: BLE001  the model's own error, reported with what changed
        raise error(f"{who}: to find how sizes follow the dynamic axes, the model runs with other sizes ({changes}), "
                    f"and it failed: {type(exc).__name__}: {exc}") from exc


def _resized(args, kwargs, axes: dict, sizes: dict, base: dict):
    """The inputs with every dynamic axis at its probe size (entries repeated or dropped along the axis)."""
    from .. import arange, no_grad

    Tensor = links.tensor.type
    replaced = {}
    with no_grad():
        for path, per_axis in axes.items():
            t = at_path((args, kwargs), path)
            for axis, symbol in per_axis.items():
                if sizes[symbol] != base[symbol]:
                    picks = arange(sizes[symbol], device=t.device) % t.shape[axis]
                    t = t.index_select(axis, picks)
            replaced[path] = t

    def rebuild(tree, prefix):
        if isinstance(tree, (list, tuple)) and not isinstance(tree, Tensor):
            items = [rebuild(item, (*prefix, i)) for i, item in enumerate(tree)]
            return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
        if isinstance(tree, dict):
            return {k: rebuild(v, (*prefix, k)) for k, v in tree.items()}
        return replaced.get(prefix, tree)

    return rebuild(args, (0,)), rebuild(kwargs, (1,))


def _check_same_program(graphs: list, probes: list, who: str, error: type) -> None:
    first = graphs[0]
    for graph, probe in zip(graphs[1:], probes[1:]):
        ops_a = [step.op.name for step in first.steps]
        ops_b = [step.op.name for step in graph.steps]
        wiring_a = [[_slots(v) for v in step.values] for step in first.steps]
        wiring_b = [[_slots(v) for v in step.values] for step in graph.steps]
        if ops_a != ops_b or wiring_a != wiring_b:
            at = next((i for i, (a, b) in enumerate(zip(ops_a, ops_b)) if a != b), min(len(ops_a), len(ops_b)))
            raise error(
                f"{who}: the model runs different ops when the dynamic axes change size (sizes "
                f"{probe.sizes}: {len(ops_b)} ops instead of {len(ops_a)}, first difference at op {at}: "
                f"{ops_a[at] if at < len(ops_a) else 'end'} vs {ops_b[at] if at < len(ops_b) else 'end'}); Python "
                f"control flow over a dynamic size (a loop over the sequence) cannot be exported with that axis "
                f"dynamic")


def _slots(v):
    if isinstance(v, Value):
        return v.slot
    if isinstance(v, (list, tuple)):
        return [_slots(x) for x in v]
    return None


def _holds_value(v) -> bool:
    return isinstance(v, Value) or (isinstance(v, (list, tuple)) and any(isinstance(x, Value) for x in v))


def _all_values(graph: Graph) -> list:
    values = [i.value for i in graph.inputs]
    for step in graph.steps:
        values.extend(step.outputs)
    return values


def tensor_leaves(tree) -> list:
    """(path, tensor) for every tensor in nested args, in order."""
    Tensor = links.tensor.type
    return [(path, t) for path, t in _paths(tree) if isinstance(t, Tensor)]


__all__ = ["SymbolicForms", "fixed_forms", "follow_axes", "tensor_leaves"]
