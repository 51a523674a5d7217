"""``export``: capture the model once, follow its dynamic dimensions, lift its state, and make the program.

The capture runs the model for real (``ember.export.capture``), and following the dynamic dimensions runs it
again at other sizes (``ember.export.symbolic``). Neither may change what the user has: the model's parameters
and buffers, the example inputs and the random generators are put back as they were afterwards.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from ..compiler.capture import _paths
from ..dispatch.contract import registry
from ..dispatch.execution import links
from ..dispatch.execution.modes import DispatchMode
from ..dispatch.schema import OPS
from .capture import capture
from .dims import SymbolicSize
from .dynamic_shapes import DynamicAxes, Dim, describe_path, parse, _argument_names
from .errors import ExportError
from .graph import build
from .program import ExportedProgram
from .symbolic import fixed_forms, follow_axes

WHO = "ember.export.export"


def export(mod, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = (), prefer_deferred_runtime_asserts_over_guards: bool = False
           ) -> ExportedProgram:
    """Capture ``mod(*args, **kwargs)`` as a graph of schema ops (PyTorch's ``torch.export.export``).

    ``dynamic_shapes`` names the input dimensions the program takes at any size (see ``Dim``); every other one
    is fixed, and ``module()`` refuses other sizes. Both ``strict`` modes capture by running the model once
    (and again at other sizes for dynamic dimensions), restoring its state afterwards; Python control flow that
    reads tensor values is an error naming the line.
    """
    from ..nn.modules.module import Module

    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    kwargs = dict(kwargs or {})
    spec = parse(dynamic_shapes, mod, args, kwargs)
    return export_program(mod, args, kwargs, spec, keeps=_every_op, who=WHO)


def draft_export(mod, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None,
                 preserve_module_call_signature: tuple = (), strict: bool = False,
                 prefer_deferred_runtime_asserts_over_guards: bool = False) -> ExportedProgram:
    """``export``, as PyTorch's ``torch.export.draft_export`` is called: Ember's capture already either gives a
    program that runs for every size it accepts, or an error naming the input, dimension or line."""
    return export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)


def _every_op(op) -> bool:
    return True


def export_program(function: Callable, args: tuple, kwargs: dict, spec: DynamicAxes, *, keeps: Callable,
                   who: str, overrides: dict | None = None, user_names: dict | None = None) -> ExportedProgram:
    """The program of ``function(*args, **kwargs)``, recording the ops ``keeps`` names whole; ``overrides``
    maps op names to functions that run in their place while capturing."""
    _check_leaves(args, kwargs, who)

    def recapture(a, k):
        return capture(function, a, k, keeps=keeps, who=who, error=ExportError)[0]

    with _kept_as_they_were(function, args, kwargs), _overriding(overrides or {}):
        graph, tracer, _ = capture(function, args, kwargs, keeps=keeps, who=who, error=ExportError)
        spec, forms = _followed(spec, recapture, args, kwargs, graph, who)
    state_dict, constants, non_persistent = _state(function)
    used = {s for shape in forms.shapes.values() for size in shape if isinstance(size, SymbolicSize)
            for s in size.symbols}
    ranges = {s: r for s, r in spec.ranges.items() if s in used or any(
        s in per.values() for per in spec.axes.values())}
    names = user_names if user_names is not None else _user_names(function, args, kwargs)
    program, lifted = build(graph, tracer, forms, _state_names(function, non_persistent), names, args, kwargs, ranges)
    constants.update(lifted)
    return ExportedProgram(program, state_dict, constants, (args, kwargs))


def redo(exported: ExportedProgram, table) -> ExportedProgram:
    """``exported`` captured again with the ops of ``table`` decomposed (``run_decompositions``)."""
    module = exported.module()
    args, kwargs = exported.example_inputs
    program = exported.graph
    spec = DynamicAxes()
    for placeholder in program.user_inputs():
        for axis, size in enumerate(program.metas[placeholder.slot].shape):
            if isinstance(size, SymbolicSize) and len(size.terms) == 1 and size.terms[0][1] == 1 \
                    and len(size.terms[0][0]) == 1:
                symbol = size.terms[0][0][0]
                spec.axes.setdefault(placeholder.path, {})[axis] = symbol
                spec.ranges[symbol] = program.ranges.get(symbol, (0, None))
    names = {p.path: p.name for p in program.user_inputs()}
    return export_program(module, args, kwargs, spec, keeps=lambda op: op.kind == "primitive" or op.name not in table,
                          who="ember.export.ExportedProgram.run_decompositions", overrides=table.overrides(),
                          user_names=names)


def _followed(spec: DynamicAxes, recapture, args, kwargs, graph, who: str):
    """(spec, forms): the graph's integers fitted to the dynamic dimensions, leaving fixed the ``Dim.AUTO`` ones that
    the program does not follow (each tried alone where the whole set fails)."""
    def follow(candidate: DynamicAxes):
        if not candidate.axes:
            return fixed_forms(graph)
        return follow_axes(recapture, args, kwargs, graph, candidate.axes, describe_path, who=who, error=ExportError,
                           ranges={s: (max(low, 2), high) for s, (low, high) in candidate.ranges.items()})

    try:
        return spec, follow(spec)
    except ExportError:
        if not spec.optional:
            raise
    every = set(spec.ranges)

    def follows_alone(symbol: str) -> bool:
        try:
            follow(spec.without(every - {symbol}))
            return True
        except ExportError:
            return False

    fixed = {s for s in spec.optional if not follows_alone(s)}
    if not fixed:
        return spec, follow(spec)  # raises the error of the whole set
    return _followed(spec.without(fixed), recapture, args, kwargs, graph, who)


def _check_leaves(args: tuple, kwargs: dict, who: str) -> None:
    Tensor = links.tensor.type
    for path, leaf in _paths((args, kwargs)):
        if not isinstance(leaf, (Tensor, int, float, bool, str, type(None))):
            raise ExportError(f"{who}: the input {describe_path(path)} is a {type(leaf).__name__}; an exported "
                              f"program takes tensors, numbers, strings, None and tuples, lists and dicts of them")


def _user_names(function, args: tuple, kwargs: dict) -> dict:
    """path -> a readable name for every input: the parameter of ``forward`` it binds to."""
    names = {}
    by_name = _argument_names(function, args, kwargs)
    for name, (path, _) in by_name.items():
        names[path] = name
    Tensor = links.tensor.type
    for path, leaf in _paths((args, kwargs)):
        if isinstance(leaf, Tensor) and path not in names:
            base = names.get(path[:2])
            names[path] = f"{base}_{'_'.join(map(str, path[2:]))}" if base else None
    return {path: name for path, name in names.items() if name}


def _state(function) -> tuple[dict, dict, set]:
    """The model's parameters and persistent buffers (by ``state_dict`` key), its non-persistent buffers (which,
    as in PyTorch, go with the constants), and their names."""
    if not hasattr(function, "state_dict"):
        return {}, {}, set()
    state_dict = dict(function.state_dict(keep_vars=True))
    constants = {name: b for name, b in function.named_buffers() if name not in state_dict and b is not None}
    lifted = getattr(function, "_lifted_constants", frozenset())
    non_persistent = {name for name in constants if name not in lifted}
    return state_dict, constants, non_persistent


def _state_names(function, non_persistent: set) -> dict:
    """id(tensor) and id(its array) -> (kind, name, persistent) for the model's parameters and buffers."""
    names: dict = {}
    if not hasattr(function, "named_parameters"):
        return names
    lifted = getattr(function, "_lifted_constants", frozenset())
    entries = [("parameter", n, t) for n, t in function.named_parameters(remove_duplicate=False)]
    entries += [("constant" if n in lifted else "buffer", n, t)
                for n, t in function.named_buffers(remove_duplicate=False)]
    for kind, name, tensor in entries:
        if tensor is None:
            continue
        entry = (kind, name, name not in non_persistent)
        names.setdefault(id(tensor), entry)
        names.setdefault(id(tensor._data), entry)
    return names


@contextmanager
def _kept_as_they_were(function, args: tuple, kwargs: dict) -> Iterator[None]:
    """Put the model's state, the example inputs and the default generators of their devices back afterwards."""
    from .. import no_grad

    Tensor = links.tensor.type
    tensors = [leaf for _, leaf in _paths((args, kwargs)) if isinstance(leaf, Tensor)]
    if hasattr(function, "state_dict"):
        tensors += [t for t in function.state_dict(keep_vars=True).values() if isinstance(t, Tensor)]
        tensors += [b for _, b in function.named_buffers() if b is not None]
    with no_grad():
        saved = [(t, t.detach().clone()) for t in {id(t): t for t in tensors}.values()]
    generators = _generators({t.device for t, _ in saved})
    states = [(g, g.get_state()) for g in generators]
    try:
        yield
    finally:
        with no_grad():
            for tensor, copy in saved:
                if tuple(tensor.shape) == tuple(copy.shape):
                    tensor.detach().copy_(copy)
        for generator, state in states:
            generator.set_state(state)


def _generators(devices: set) -> list:
    found = []
    for device in devices | {registry.resolve_device("cpu")}:
        backend = registry.get_backend(device.type)
        try:
            found.append(backend.default_generator(device.index))
        except Exception:  # noqa: BLE001  a backend without a default generator to keep
            continue
    return found


class _Overriding(DispatchMode):
    """Runs a user's function in place of each op it names (``run_decompositions`` with a custom table)."""

    def __init__(self, overrides: dict) -> None:
        self.overrides = overrides

    def __torch_dispatch__(self, func, types, args, kwargs=None):
        replacement = self.overrides.get(func.op.name)
        if replacement is None:
            return func(*args, **(kwargs or {}))
        return replacement(*args, **(kwargs or {}))


@contextmanager
def _overriding(overrides: dict) -> Iterator[None]:
    if not overrides:
        yield
        return
    with _Overriding(overrides):
        yield


__all__ = ["export", "draft_export", "export_program", "redo", "Dim", "OPS"]
