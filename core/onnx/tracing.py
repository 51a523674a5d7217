"""Capturing a model for export: the compiler's tracer, recording each op at the level ONNX can write it.

The compiler's ``Tracer`` records what the backend runs (a composite the backend has a kernel for is one
node). Export wants the op with an ONNX lowering instead, whatever the backend: an op that has one is
recorded whole, and every composite without one runs its definition so that its inner ops are recorded.
Each node also gets the path of the module whose forward made it, for node names and errors.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Any, Iterator

from ..compiler.capture import GraphBreak, Tracer, arg_paths
from ..compiler.graph import Graph, OpNode
from ..dispatch.execution.plan import use_composite
from ..dispatch.schema import OPS
from .errors import OnnxExporterError

_exporting = [False]


def is_in_onnx_export() -> bool:
    """True while ``ember.onnx.export`` runs the model (PyTorch's ``torch.onnx.is_in_onnx_export``)."""
    return _exporting[0]


class ExportTracer(Tracer):
    """A ``Tracer`` that records ops with a lowering whole and notes the module path of every node."""

    def __init__(self, arg_paths_: dict) -> None:
        super().__init__(arg_paths_, [], fullgraph=True)
        self.module_path: list[str] = []
        self.scopes: dict[int, str] = {}  # id(OpNode) -> dotted path of the module that made it ("": the model)

    def decomposes(self, op, plan, args: tuple, kwargs: dict) -> bool:
        return op.onnx is None and plan.kind == "composite"

    def __torch_dispatch__(self, func, types, args, kwargs=None):
        before = len(self.graph.steps)
        result = super().__torch_dispatch__(func, types, args, kwargs)
        scope = self.module_path[-1] if self.module_path else ""
        for step in self.graph.steps[before:]:
            self.scopes.setdefault(id(step), scope)
        return result


@contextmanager
def _module_scopes(model, tracer: ExportTracer) -> Iterator[None]:
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
def _composites_decomposed() -> Iterator[None]:
    """Every composite without a lowering runs its definition, even where the backend has a kernel for it."""
    with ExitStack() as stack:
        for op in OPS.values():
            if op.kind == "composite" and op.onnx is None:
                stack.enter_context(use_composite(op))
        yield


def capture(model, args: tuple, kwargs: dict) -> tuple[Graph, ExportTracer, Any]:
    """Run ``model(*args, **kwargs)`` once under the export tracer; returns the graph, the tracer (which keeps
    every captured tensor) and the model's result."""
    from .. import no_grad

    tracer = ExportTracer(arg_paths(args, kwargs))
    _exporting[0] = True
    try:
        with no_grad(), _composites_decomposed(), _module_scopes(model, tracer):
            result = tracer.run(model, args, kwargs)
    except GraphBreak as error:
        raise OnnxExporterError(
            f"ember.onnx.export: the model's result depends on tensor values read in Python, which an ONNX graph "
            f"cannot express: {str(error).split(': ', 1)[-1]}") from None
    finally:
        _exporting[0] = False
    breaks = tracer.graph.breaks
    if breaks:
        raise OnnxExporterError(f"ember.onnx.export: the model cannot be captured whole: {breaks[0]}")
    for step in tracer.graph.steps:
        if not isinstance(step, OpNode):
            raise OnnxExporterError(f"ember.onnx.export: {getattr(step, 'name', type(step).__name__)} runs "
                                    f"eagerly and cannot be exported")
    return tracer.graph, tracer, result


__all__ = ["capture", "is_in_onnx_export", "ExportTracer"]
