"""``ember.onnx``: export models to ONNX, as ``torch.onnx``.

The model is captured through the compiler's tracing dispatch mode into a graph of schema ops; each op is
written by the ONNX lowering declared with it in the schema (``OpDef.onnx``); the result passes
``onnx.checker.check_model(full_check=True)``. Importing this module needs no ``onnx`` package (programs
import ``torch.onnx`` at the top); exporting does: ``pip install 'ember[onnx]'``.
"""
from __future__ import annotations

import importlib.util

from . import errors
from .errors import CheckerError, OnnxExporterError, SymbolicValueError, UnsupportedOperatorError
from .options import OperatorExportTypes, TrainingMode
from .tracing import is_in_onnx_export

#: The opset ``export`` writes when none is asked for (PyTorch 2.x's default).
DEFAULT_OPSET = 18


def export(model, args=(), f=None, **options):
    """Export ``model(*args)`` to ONNX at ``f`` (a path or a binary file object); see
    ``ember.onnx.exporter.export`` for every option. PyTorch's signature: ``export(model, args, f, *,
    kwargs=None, export_params=True, verbose=None, input_names=None, output_names=None, opset_version=None,
    dynamic_axes=None, keep_initializers_as_inputs=False, training=TrainingMode.EVAL,
    do_constant_folding=True, ...)``."""
    if importlib.util.find_spec("onnx") is None:
        raise ImportError("ember.onnx.export needs the onnx package: pip install 'ember[onnx]'")
    from .exporter import export as run_export

    return run_export(model, args, f, **options)


__all__ = ["export", "is_in_onnx_export", "TrainingMode", "OperatorExportTypes", "errors", "OnnxExporterError",
           "UnsupportedOperatorError", "SymbolicValueError", "CheckerError", "DEFAULT_OPSET"]
