"""``ember.jit.script``: functions and modules run through ``ember.compile``, under TorchScript's names.

This is not TorchScript's compiler: the code stays Python, and ``ember.compile`` captures what it can and runs
the rest eagerly, so every program TorchScript accepts runs, and many it refuses do too. A scripted module or
function remembers the arguments of its first call, so that ``save`` can trace it (``ember.jit.trace``) into a
program that loads without the source.
"""
from __future__ import annotations

import inspect
from typing import Any

from ..nn.modules.module import Module


class ScriptModule(Module):
    """The base of every module ``ember.jit`` makes (``script``, ``trace``, ``load``)."""

    def save(self, f, _extra_files: dict | None = None) -> None:
        """Write this module as ``ember.jit.save`` does."""
        from .archive import save

        save(self, f, _extra_files=_extra_files)

    def save_to_buffer(self, _extra_files: dict | None = None) -> bytes:
        import io

        buffer = io.BytesIO()
        self.save(buffer, _extra_files)
        return buffer.getvalue()


class RecursiveScriptModule(ScriptModule):
    """A scripted module: the original's class, attributes and (shared) tensors, its forward compiled."""

    def exported_program(self):
        from .tracing import trace_program

        examples = self.__dict__.get("_ember_first_call")
        if examples is None:
            raise RuntimeError(f"ember.jit.save: the scripted {self.original_name} has not been called yet, so there "
                               f"is nothing to trace its program from; call it once on example inputs (or use "
                               f"ember.jit.trace) before saving")
        return trace_program(self._ember_unscripted, *examples)


class ScriptFunction:
    """A scripted function: called as it, through ``ember.compile``."""

    def __init__(self, function) -> None:
        from ..compiler.api import compile

        self._function = function
        self._compiled = compile(function)
        self._first_call = None
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            if hasattr(function, attr):
                setattr(self, attr, getattr(function, attr))

    def __call__(self, *args, **kwargs):
        if self._first_call is None:
            self._first_call = (args, kwargs)
        return self._compiled(*args, **kwargs)

    @property
    def code(self) -> str:
        try:
            return inspect.getsource(self._function)
        except (OSError, TypeError):
            return ""

    def exported_program(self):
        from .tracing import trace_program

        if self._first_call is None:
            raise RuntimeError(f"ember.jit.save: the scripted function {self.__name__} has not been called yet, so "
                               f"there is nothing to trace its program from; call it once first")
        return trace_program(self._function, *self._first_call)

    def save(self, f, _extra_files: dict | None = None) -> None:
        from .archive import save

        save(self, f, _extra_files=_extra_files)


def script(obj: Any, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """A module or function that runs through ``ember.compile`` (PyTorch's ``torch.jit.script``; see the
    module docstring for how it differs). Classes are returned as they are: they run as Python."""
    if isinstance(obj, (ScriptModule, ScriptFunction)) or inspect.isclass(obj):
        return obj
    if isinstance(obj, Module):
        scripted = _scripted_module(obj, {})
        _compile_forward(scripted)
        if example_inputs:
            first = example_inputs[0]
            scripted.__dict__["_ember_first_call"] = (tuple(first), {})
        return scripted
    if callable(obj):
        scripted = ScriptFunction(obj)
        if example_inputs:
            scripted._first_call = (tuple(example_inputs[0]), {})
        return scripted
    raise RuntimeError(f"ember.jit.script: cannot script a {type(obj).__name__}; give a module or a function")


def _scripted_module(module: Module, done: dict) -> RecursiveScriptModule:
    """A ``RecursiveScriptModule`` sharing ``module``'s tensors (its own dicts of them), with scripted children."""
    if id(module) in done:
        return done[id(module)]
    cls = type(module)
    scripted_class = type(f"RecursiveScriptModule[{cls.__name__}]", (RecursiveScriptModule, cls),
                          {"__module__": cls.__module__})
    scripted = object.__new__(scripted_class)
    done[id(module)] = scripted
    state = dict(module.__dict__)
    for store in ("_parameters", "_buffers"):
        if store in state:
            state[store] = dict(state[store])
    if "_non_persistent_buffers" in state:
        state["_non_persistent_buffers"] = set(state["_non_persistent_buffers"])
    state["_modules"] = {name: None if child is None else _scripted_module(child, done)
                         for name, child in module.__dict__.get("_modules", {}).items()}
    state["original_name"] = cls.__name__
    state["_ember_unscripted"] = _Unscripted(scripted, cls)
    object.__setattr__(scripted, "__dict__", state)
    return scripted


def _compile_forward(scripted: RecursiveScriptModule) -> None:
    """Route the top module's calls through ``ember.compile``, noting the first call's arguments for ``save``."""
    from ..compiler.api import compile

    compiled = compile(scripted._ember_unscripted)

    def forward(*args, **kwargs):
        if "_ember_first_call" not in scripted.__dict__:
            scripted.__dict__["_ember_first_call"] = (args, kwargs)
        return compiled(*args, **kwargs)

    scripted.__dict__["forward"] = forward


class _Unscripted:
    """``scripted`` as its original class would run it: its state, for naming, and its own forward."""

    def __init__(self, scripted: Module, cls: type) -> None:
        self.scripted, self.cls = scripted, cls

    def __call__(self, *args, **kwargs):
        return self.cls.forward(self.scripted, *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.scripted, name)


__all__ = ["ScriptModule", "RecursiveScriptModule", "ScriptFunction", "script"]
