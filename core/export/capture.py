"""Capturing a whole program for export: the compiler's tracer, recording each op at the level the export keeps.

The compiler's ``Tracer`` records what the backend runs (a composite the backend has a kernel for is one node).
An export chooses instead which ops it keeps whole (``keeps(op)``), whatever the backend: ``ember.export`` keeps
every op as the program called it, ``run_decompositions`` and ONNX keep fewer. Every composite that is not kept
runs its definition, so that its inner ops are recorded. Each node also gets the path of the module whose
forward made it, and the user's source line, for names, printing and errors.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

from ..compiler.capture import GraphBreak, Tracer, arg_paths, user_line
from ..compiler.graph import Graph, OpNode
from ..dispatch.execution.plan import use_composite
from ..dispatch.schema import OPS
from .interpreter import running_node


class WholeProgramTracer(Tracer):
    """A ``Tracer`` that records the ops ``keeps`` names whole, and notes where each node was made."""

    def __init__(self, arg_paths_: dict, keeps: Callable) -> None:
        super().__init__(arg_paths_, [], fullgraph=True)
        self.keeps = keeps
        self.module_path: list[str] = []
        self.scopes: dict[int, str] = {}  # id(OpNode) -> dotted path of the module that made it ("": the model)
        self.lines: dict[int, str] = {}  # id(OpNode) -> the user's source line that made it

    def decomposes(self, op, plan, args: tuple, kwargs: dict) -> bool:
        return not self.keeps(op) and plan.kind == "composite"

    def __torch_dispatch__(self, func, types, args, kwargs=None):
        before = len(self.graph.steps)
        result = super().__torch_dispatch__(func, types, args, kwargs)
        if len(self.graph.steps) > before:
            replaying = running_node[0]  # an exported program captured again: its nodes' own places
            scope = replaying.scope if replaying else (self.module_path[-1] if self.module_path else "")
            line = replaying.line if replaying else user_line()
            for step in self.graph.steps[before:]:
                self.scopes.setdefault(id(step), scope)
                self.lines.setdefault(id(step), line)
        return result


@contextmanager
def _module_scopes(model, tracer: WholeProgramTracer) -> Iterator[None]:
    """Keep ``tracer.module_path`` at the module whose forward is running."""
    handles = []
    named_modules = getattr(model, "named_modules", None)
    for label, module in (named_modules() if named_modules else ()):
        def enter(module, inputs, label=label):
            tracer.module_path.append(label)

        def leave(module, inputs, output):
            if tracer.module_path:
                tracer.module_path.pop()

        if label:
            handles.append(module.register_forward_pre_hook(enter))
            handles.append(module.register_forward_hook(leave))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def _composites_decomposed(keeps: Callable) -> Iterator[None]:
    """Every composite not kept runs its definition, even where the backend has a kernel for it."""
    with ExitStack() as stack:
        for op in list(OPS.values()):
            if op.kind == "composite" and not keeps(op):
                stack.enter_context(use_composite(op))
        yield


def capture(model, args: tuple, kwargs: dict, *, keeps: Callable, who: str,
            error: type = RuntimeError) -> tuple[Graph, WholeProgramTracer, Any]:
    """Run ``model(*args, **kwargs)`` once under the tracer, recording the ops ``keeps(op)`` is true for whole;
    returns the graph, the tracer (which keeps every captured tensor) and the model's result. What cannot be
    captured whole raises ``error`` with ``who`` (the public function) in its message."""
    from .. import no_grad

    tracer = WholeProgramTracer(arg_paths(args, kwargs), keeps)
    try:
        with no_grad(), _composites_decomposed(keeps), _module_scopes(model, tracer):
            result = tracer.run(model, args, kwargs)
    except GraphBreak as exc:
        raise error(f"{who}: the model's result depends on tensor values read in Python, which a graph of ops "
                    f"cannot express: {str(exc).split(': ', 1)[-1]}") from None
    if tracer.graph.breaks:
        raise error(f"{who}: the model cannot be captured whole: {tracer.graph.breaks[0]}")
    for step in tracer.graph.steps:
        if not isinstance(step, OpNode):
            raise error(f"{who}: {getattr(step, 'name', type(step).__name__)} runs eagerly and cannot be exported")
    return tracer.graph, tracer, result


__all__ = ["capture", "WholeProgramTracer"]
