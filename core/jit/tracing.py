"""``ember.jit.trace``: a module or function captured into an exported program (``ember.export``'s machinery).

Every dimension of every example input is ``Dim.AUTO``: it stays free where the program follows it (a batch
size, a sequence length) and is fixed where the program does not, so a traced model runs at other batch sizes
as a TorchScript trace does, and refuses sizes it was not traced for with a clear error instead of a wrong result.
"""
from __future__ import annotations

import warnings
from typing import Callable

from ..compiler.graph import leaves
from ..dispatch.execution import links
from ..export.dynamic_shapes import Dim, parse
from ..export.exporting import export_program
from ..export.module import ExportedModule
from ..export.program import ExportedProgram
from .script_module import ScriptModule

_tracing = [0]


class TracerWarning(Warning):
    """A traced program that may not do what the Python code does (PyTorch's ``torch.jit.TracerWarning``)."""


def is_tracing() -> bool:
    """True while ``ember.jit.trace`` runs the traced code."""
    return _tracing[0] > 0


class TracedModule(ExportedModule, ScriptModule):
    """What ``trace`` and ``load`` return: the traced program with the module's parameters and buffers."""

    def __init__(self, exported: ExportedProgram, name: str = "TracedModule") -> None:
        ExportedModule.__init__(self, exported.graph, exported.state_dict, exported.constants,
                                set(exported.graph_signature.non_persistent_buffers))
        self.original_name = name

    def exported_program(self) -> ExportedProgram:
        """The program and this module's current state, as ``ember.export`` has them (what ``save`` writes)."""
        state = {name: t for name, t in self.state_dict(keep_vars=True).items()}
        constants = {name: b for name, b in self.named_buffers() if name not in state}
        return ExportedProgram(self.graph, state, constants)


class TracedFunction(ScriptModule):
    """A traced function: called like it, saved like a traced module."""

    def __init__(self, exported: ExportedProgram, name: str) -> None:
        super().__init__()
        self.module = TracedModule(exported, name)
        self.__name__ = self.__qualname__ = name

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def exported_program(self) -> ExportedProgram:
        return self.module.exported_program()

    @property
    def graph(self):
        return self.module.graph

    @property
    def code(self) -> str:
        return self.module.code


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs: dict | None = None, _store_inputs: bool = True):
    """Run ``func`` (a module or a function) on the example inputs and keep the ops it ran as a program
    (PyTorch's ``torch.jit.trace``). Python control flow over sizes is kept as traced; over tensor values it is
    an error naming the line. ``check_trace`` runs the result once on the inputs and warns where it differs."""
    from ..nn.modules.module import Module

    if isinstance(func, ScriptModule):
        return func
    args = _as_args(example_inputs)
    kwargs = dict(example_kwarg_inputs or {})
    if not args and not kwargs:
        raise ValueError("ember.jit.trace: give example_inputs (a tensor or a tuple of them) or example_kwarg_inputs")
    name = type(func).__name__ if isinstance(func, Module) else getattr(func, "__name__", "function")
    exported = trace_program(func, args, kwargs)
    traced = TracedModule(exported, name) if isinstance(func, Module) else TracedFunction(exported, name)
    if check_trace:
        _check(func, traced, args, kwargs, check_tolerance)
        for extra in check_inputs or ():
            _check(func, traced, _as_args(extra), {}, check_tolerance)
    return traced


def trace_module(mod, inputs: dict, optimize=None, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True):
    """``trace`` of ``mod.forward`` with ``inputs["forward"]`` (PyTorch's ``torch.jit.trace_module``); Ember's
    traced modules hold one program, so ``inputs`` names ``forward`` only."""
    if not isinstance(inputs, dict) or set(inputs) != {"forward"}:
        raise ValueError(f"ember.jit.trace_module: inputs must be {{'forward': example inputs}}, got keys "
                         f"{sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__}; a traced "
                         f"module holds one program, its forward")
    example = inputs["forward"]
    if example_inputs_is_kwarg:
        return trace(mod, None, check_trace=check_trace, check_tolerance=check_tolerance,
                     example_kwarg_inputs=example)
    return trace(mod, example, check_trace=check_trace, check_inputs=check_inputs, check_tolerance=check_tolerance)


def trace_program(func: Callable, args: tuple, kwargs: dict) -> ExportedProgram:
    """The program of ``func(*args, **kwargs)`` with every input dimension ``Dim.AUTO``."""
    spec = [_auto(a) for a in args] + [_auto(v) for v in kwargs.values()]
    axes = parse(spec, func, args, kwargs)
    _tracing[0] += 1
    try:
        return export_program(func, args, kwargs, axes, keeps=lambda op: True, who="ember.jit.trace")
    finally:
        _tracing[0] -= 1


def _auto(arg):
    Tensor = links.tensor.type
    if isinstance(arg, Tensor):
        return {axis: Dim.AUTO for axis in range(arg.dim())}
    if isinstance(arg, (tuple, list)):
        return type(arg)(_auto(a) for a in arg)
    if isinstance(arg, dict):
        return {k: _auto(v) for k, v in arg.items()}
    return None


def _as_args(example) -> tuple:
    if example is None:
        return ()
    if isinstance(example, links.tensor.type):
        return (example,)
    if isinstance(example, list):
        return tuple(example)
    if not isinstance(example, tuple):
        return (example,)
    return example


def _check(func, traced, args: tuple, kwargs: dict, tolerance: float) -> None:
    """Warn where the traced program's result differs from the function's on these inputs."""
    from .. import no_grad

    Tensor = links.tensor.type
    with no_grad():
        expected = leaves(func(*args, **kwargs))
        got = leaves(traced(*args, **kwargs))
    for index, (e, g) in enumerate(zip(expected, got)):
        if isinstance(e, Tensor) and isinstance(g, Tensor):
            if e.shape != g.shape or not _close(e, g, tolerance):
                warnings.warn(f"Output nr {index + 1}. of the traced function does not match the corresponding "
                              f"output of the Python function (shapes {tuple(e.shape)} and {tuple(g.shape)}): the "
                              f"function may be nondeterministic (dropout in training mode) or read state the "
                              f"trace fixed", TracerWarning, stacklevel=3)
                return


def _close(a, b, tolerance: float) -> bool:
    if a.dtype.is_floating_point:
        return bool((((a - b).abs() <= tolerance + tolerance * b.abs()) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())


__all__ = ["trace", "trace_module", "trace_program", "is_tracing", "TracedModule", "TracedFunction",
           "TracerWarning"]
