"""Capturing a model for ONNX: the export capture, keeping whole each op that has an ONNX lowering.

Every composite without a lowering runs its definition so that its inner ops are recorded (``ember.export``'s
``capture``); each node notes the path of the module that made it, for node names and errors.
"""
from __future__ import annotations

from typing import Any

from ..compiler.graph import Graph
from ..export.capture import WholeProgramTracer, capture as capture_program
from .errors import OnnxExporterError

_exporting = [False]


def is_in_onnx_export() -> bool:
    """True while ``ember.onnx.export`` runs the model (PyTorch's ``torch.onnx.is_in_onnx_export``)."""
    return _exporting[0]


def _has_lowering(op) -> bool:
    return op.onnx is not None


def capture(model, args: tuple, kwargs: dict) -> tuple[Graph, WholeProgramTracer, Any]:
    """Run ``model(*args, **kwargs)`` once under the export tracer; returns the graph, the tracer (which keeps
    every captured tensor) and the model's result."""
    _exporting[0] = True
    try:
        return capture_program(model, args, kwargs, keeps=_has_lowering, who="ember.onnx.export",
                               error=OnnxExporterError)
    finally:
        _exporting[0] = False


__all__ = ["capture", "is_in_onnx_export"]
