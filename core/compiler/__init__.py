"""``ember.compiler`` (PyTorch's ``torch.compiler``) and the machinery behind ``ember.compile``.

Capture (``capture``) records a program's op calls through a dispatch mode; ``entry`` builds replayable
entries, differentiable ones with their backward captured too; ``program`` turns steps into one
generated function over native arrays, after ``fuse`` has given elementwise chains to the backend's
code generator; ``api`` holds ``compile`` and its guards; ``explain`` says what was captured and why not;
``reduce_overhead`` and ``device_graph`` run ``mode="reduce-overhead"``: a static memory plan per program,
replayed as a device graph (CUDA graphs) where the backend's ``DeviceGraphs`` hook captures one.

``state`` is light and imported by ``ember.nn`` and ``ember.optim``; the rest loads on first use.
"""
from __future__ import annotations

import importlib

from . import config
from .explain import ExplainOutput, explain  # the function, not its module, is ``ember.compiler.explain``
from .state import is_compiling

_LAZY = {"compile": "api", "reset": "api", "disable": "api", "list_backends": "api", "CompiledFunction": "api",
         "OptimizedModule": "api", "GraphBreak": "capture"}


def is_dynamo_compiling() -> bool:
    """PyTorch's other spelling of ``is_compiling``."""
    return is_compiling()


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ember.compiler' has no attribute '{name}'")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling", "list_backends", "explain",
           "ExplainOutput", "GraphBreak", "CompiledFunction", "OptimizedModule", "config"]
