"""``ember.export``: a model's forward as a graph of schema ops that runs, and saves, without its source.

As ``torch.export``: ``export(model, args, dynamic_shapes=...)`` returns an ``ExportedProgram``; ``.module()``
runs it on any backend, ``save``/``load`` write and read one ``.pt2`` zip of graph and weights that loads in a
process without the model's Python source, and that loading never runs code from.
"""
from __future__ import annotations

from .archive import load, save
from . import graph_signature
from .dynamic_shapes import AdditionalInputs, Dim, ShapesCollection, dims
from .errors import ExportError, ExportLoadError
from .exporting import draft_export, export
from .program import DecompositionTable as CustomDecompTable, ExportedProgram, default_decompositions
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec, TensorArgument)

__all__ = ["export", "draft_export", "save", "load", "Dim", "dims", "ShapesCollection", "AdditionalInputs",
           "graph_signature", "ExportedProgram", "ExportGraphSignature", "InputKind", "InputSpec",
           "OutputKind", "OutputSpec", "TensorArgument", "default_decompositions", "CustomDecompTable",
           "ExportError", "ExportLoadError"]
