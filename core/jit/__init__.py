"""``ember.jit``: TorchScript's names on Ember (``torch.jit``).

``trace`` captures a module or function into an ``ember.export`` program; ``save`` and ``load`` write and read it
as one file that loads without the model's source and runs no code from the file. ``script`` runs functions and
modules through ``ember.compile`` (it is not TorchScript's compiler: the code stays Python); the annotations
(``ignore``, ``unused``, ``export``, ``annotate``, ``Final``...) are accepted and change nothing, and ``fork``
runs its call at once, so that programs written for TorchScript run unchanged.
"""
from __future__ import annotations

from .archive import load, save
from .markers import (Attribute, CompilationUnit, Error, Final, Future, annotate, enable_onednn_fusion, export,
                      export_opnames, fork, freeze, ignore, interface, is_scripting, isinstance, onednn_fusion_enabled,
                      optimize_for_inference, script_if_tracing, set_fusion_strategy, strict_fusion, unused, wait)
from .script_module import RecursiveScriptModule, ScriptFunction, ScriptModule, script
from .tracing import TracedModule, TracerWarning, is_tracing, trace, trace_module

TopLevelTracedModule = TracedModule

__all__ = ["trace", "trace_module", "script", "save", "load", "ignore", "unused", "export", "is_scripting",
           "is_tracing", "ScriptModule", "ScriptFunction", "RecursiveScriptModule", "TracedModule",
           "TopLevelTracedModule", "TracerWarning", "fork", "wait", "Future", "annotate", "Attribute", "Final",
           "freeze", "optimize_for_inference", "script_if_tracing", "interface", "isinstance",
           "enable_onednn_fusion", "onednn_fusion_enabled", "set_fusion_strategy", "strict_fusion",
           "export_opnames", "CompilationUnit", "Error"]
