"""``Dim`` and the ``dynamic_shapes`` argument: which input dimensions an exported program takes at any size.

A spec mirrors the inputs: per argument (by name in a dict, or by position in a tuple) ``None`` for all sizes
fixed, or per tensor ``{axis: Dim}`` or a tuple with one entry per axis. ``Dim("batch", min=, max=)`` names a
size: axes given the same ``Dim`` have equal sizes. ``Dim.DYNAMIC`` is a size of its own, ``Dim.AUTO`` one that
stays fixed where the program does not follow it, ``Dim.STATIC`` (or ``None``) a fixed one.
"""
from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field

from ..dispatch.execution import links
from .errors import ExportError

WHO = "ember.export.export"


class _Hint:
    """``Dim.AUTO``, ``Dim.DYNAMIC`` and ``Dim.STATIC``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Dim.{self.name}"


class Dim:
    """A named input size, ``min <= size <= max`` (PyTorch's ``torch.export.Dim``)."""

    AUTO = _Hint("AUTO")
    DYNAMIC = _Hint("DYNAMIC")
    STATIC = _Hint("STATIC")

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim: the name must be a Python identifier, got {name!r}")
        low = 0 if min is None else int(min)
        high = None if max is None else int(max)
        if low < 0 or (high is not None and high < low):
            raise ValueError(f"Dim('{name}'): expected 0 <= min <= max, got min={min}, max={max}")
        self.__name__ = name
        self.min, self.max = low, high

    def __repr__(self) -> str:
        bounds = [f"min={self.min}"] if self.min else []
        bounds += [f"max={self.max}"] if self.max is not None else []
        return f"Dim({', '.join([repr(self.__name__)] + bounds)})"


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple[Dim, ...]:  # noqa: A002
    """One ``Dim`` per name, sharing the bounds (PyTorch's ``torch.export.dims``)."""
    return tuple(Dim(name, min=min, max=max) for name in names)


@dataclass
class DynamicAxes:
    """What a spec asks for: ``axes`` maps an input's path in ``(args, kwargs)`` to ``{axis: symbol}``; ``ranges``
    each symbol's ``(min, max)`` (max None: unbounded); ``optional`` the symbols of ``Dim.AUTO`` axes, which
    stay fixed where the program does not follow them."""
    axes: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    optional: set = field(default_factory=set)

    def without(self, symbols: set) -> "DynamicAxes":
        axes = {path: {a: s for a, s in per.items() if s not in symbols} for path, per in self.axes.items()}
        return DynamicAxes({p: per for p, per in axes.items() if per},
                           {s: r for s, r in self.ranges.items() if s not in symbols}, self.optional - symbols)


def parse(spec, function, args: tuple, kwargs: dict) -> DynamicAxes:
    """The ``DynamicAxes`` of ``dynamic_shapes=spec`` for a call ``function(*args, **kwargs)``."""
    result = DynamicAxes()
    if spec is None:
        return result
    if hasattr(spec, "dynamic_shapes"):  # a ShapesCollection or AdditionalInputs
        spec = spec.dynamic_shapes(function, args, kwargs)
    fresh = (f"s{i}" for i in itertools.count())
    for path, arg, entry in _per_argument(spec, function, args, kwargs):
        _walk(entry, arg, path, result, fresh)
    return result


def _per_argument(spec, function, args: tuple, kwargs: dict) -> list:
    """(path, argument, its spec) for each argument the spec names."""
    if isinstance(spec, dict):
        names = _argument_names(function, args, kwargs)
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ExportError(f"{WHO}: dynamic_shapes names {unknown}, which are not arguments of the call; when "
                              f"dynamic_shapes is a dict its keys must be the argument names {list(names)} (or give "
                              f"a tuple matching the inputs)")
        return [(names[k][0], names[k][1], entry) for k, entry in spec.items()]
    if isinstance(spec, (tuple, list)):
        inputs = [((0, i), a) for i, a in enumerate(args)] + [((1, k), v) for k, v in kwargs.items()]
        if len(spec) != len(inputs):
            raise ExportError(f"{WHO}: dynamic_shapes has {len(spec)} entries for {len(inputs)} inputs; give one "
                              f"per positional and keyword argument, in order (None where every size is fixed)")
        return [(path, arg, entry) for (path, arg), entry in zip(inputs, spec)]
    raise ExportError(f"{WHO}: dynamic_shapes must be a dict (by argument name), a tuple or a list, "
                      f"not {type(spec).__name__}")


def _argument_names(function, args: tuple, kwargs: dict) -> dict:
    """name -> (path, value) of every argument of the call, positional ones by the parameter they bind to."""
    names = {}
    try:
        parameters = list(inspect.signature(getattr(function, "forward", function)).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    for i, value in enumerate(args):
        if i < len(positional):
            names[positional[i].name] = ((0, i), value)
        elif varargs is not None:
            names.setdefault(varargs, ((0, i), args[i:]))  # the whole tail: a tuple spec covers it
    for key, value in kwargs.items():
        names[key] = ((1, key), value)
    return names


def _walk(entry, arg, path: tuple, result: DynamicAxes, fresh) -> None:
    Tensor = links.tensor.type
    if entry is None:
        return
    if isinstance(arg, Tensor):
        _tensor_axes(entry, arg, path, result, fresh)
    elif isinstance(arg, (tuple, list)) and isinstance(entry, (tuple, list)) and len(entry) == len(arg):
        for i, (sub_entry, sub_arg) in enumerate(zip(entry, arg)):
            _walk(sub_entry, sub_arg, (*path, i), result, fresh)
    elif isinstance(arg, dict) and isinstance(entry, dict) and set(entry) <= set(arg):
        for key, sub_entry in entry.items():
            _walk(sub_entry, arg[key], (*path, key), result, fresh)
    else:
        raise ExportError(f"{WHO}: the dynamic_shapes entry {entry!r} at {describe_path(path)} does not match the "
                          f"input there ({type(arg).__name__}): a tensor takes {{axis: Dim}} or one entry per axis, "
                          f"a tuple, list or dict of inputs takes one of the same form")


def _tensor_axes(entry, tensor, path: tuple, result: DynamicAxes, fresh) -> None:
    rank = tensor.dim()
    if isinstance(entry, dict):
        per_axis = entry
    elif isinstance(entry, (tuple, list)):
        if len(entry) != rank:
            raise ExportError(f"{WHO}: dynamic_shapes gives {len(entry)} entries for {describe_path(path)}, which "
                              f"has {rank} dimensions (shape {tuple(tensor.shape)})")
        per_axis = dict(enumerate(entry))
    else:
        raise ExportError(f"{WHO}: dynamic_shapes for the tensor {describe_path(path)} must be a dict "
                          f"{{axis: Dim}} or a tuple with one entry per axis, not {type(entry).__name__}")
    for axis, dim in per_axis.items():
        if not isinstance(axis, int) or not -rank <= axis < rank:
            raise ExportError(f"{WHO}: dynamic_shapes names dimension {axis!r} of {describe_path(path)}, which has "
                              f"shape {tuple(tensor.shape)}")
        axis %= rank
        if dim is None or dim is Dim.STATIC:
            continue
        if isinstance(dim, _Hint):
            symbol = next(fresh)
            result.ranges[symbol] = (0, None)
            if dim is Dim.AUTO:
                result.optional.add(symbol)
        elif isinstance(dim, Dim):
            symbol = dim.__name__
            known = result.ranges.setdefault(symbol, (dim.min, dim.max))
            if known != (dim.min, dim.max):
                raise ExportError(f"{WHO}: two different Dims are named '{symbol}'")
        else:
            raise ExportError(f"{WHO}: dynamic_shapes for dimension {axis} of {describe_path(path)} must be a Dim, "
                              f"Dim.AUTO, Dim.DYNAMIC, Dim.STATIC or None, not {dim!r}")
        low, high = result.ranges[symbol]
        size = tensor.shape[axis]
        if size < low or (high is not None and size > high):
            raise ExportError(f"{WHO}: {describe_path(path)}.shape[{axis}] is {size} in the example inputs, outside "
                              f"the range [{low}, {'inf' if high is None else high}] of Dim '{symbol}'")
        result.axes.setdefault(path, {})[axis] = symbol


class ShapesCollection:
    """Dynamic dimensions given per tensor rather than per argument: ``shapes[x] = (Dim("batch"), None)``; passed
    as ``dynamic_shapes=`` (PyTorch's ``torch.export.ShapesCollection``)."""

    def __init__(self) -> None:
        self._by_id: dict = {}

    def __setitem__(self, tensor, spec) -> None:
        self._by_id[id(tensor)] = (tensor, spec)

    def __getitem__(self, tensor):
        return self._by_id[id(tensor)][1]

    def __contains__(self, tensor) -> bool:
        return id(tensor) in self._by_id

    def dynamic_shapes(self, m, args: tuple, kwargs: dict | None = None):
        """The spec per argument, in the tuple form, for ``m(*args, **kwargs)``."""
        def spec_of(arg):
            if isinstance(arg, links.tensor.type):
                return self._by_id.get(id(arg), (None, None))[1]
            if isinstance(arg, (tuple, list)):
                return type(arg)(spec_of(a) for a in arg)
            if isinstance(arg, dict):
                return {k: spec_of(v) for k, v in arg.items()}
            return None
        return tuple(spec_of(a) for a in (*args, *(kwargs or {}).values()))


class AdditionalInputs:
    """More example inputs: every dimension whose size differs among them and the export's own becomes
    ``Dim.DYNAMIC``, the others stay fixed (PyTorch's ``torch.export.AdditionalInputs``)."""

    def __init__(self) -> None:
        self._examples: list = []

    def add(self, args: tuple, kwargs: dict | None = None) -> None:
        self._examples.append((tuple(args), dict(kwargs or {})))

    def dynamic_shapes(self, m, args: tuple, kwargs: dict | None = None):
        inputs = [*args, *(kwargs or {}).values()]
        others = [[*a, *k.values()] for a, k in self._examples]
        if any(len(other) != len(inputs) for other in others):
            raise ExportError(f"{WHO}: every AdditionalInputs example must have the export's {len(inputs)} inputs")

        def spec_of(arg, alternatives):
            if isinstance(arg, links.tensor.type):
                if any(not isinstance(o, links.tensor.type) or o.dim() != arg.dim() for o in alternatives):
                    raise ExportError(f"{WHO}: an AdditionalInputs example has another kind or rank of input where "
                                      f"the export has a tensor of shape {tuple(arg.shape)}")
                return tuple(Dim.DYNAMIC if any(o.shape[axis] != arg.shape[axis] for o in alternatives) else None
                             for axis in range(arg.dim()))
            if isinstance(arg, (tuple, list)):
                return type(arg)(spec_of(a, [o[i] for o in alternatives]) for i, a in enumerate(arg))
            if isinstance(arg, dict):
                return {k: spec_of(v, [o[k] for o in alternatives]) for k, v in arg.items()}
            return None
        return tuple(spec_of(arg, [other[i] for other in others]) for i, arg in enumerate(inputs))

    def verify(self, ep) -> None:
        """Run the exported program on every added example (a guard failure raises)."""
        module = ep.module()
        for args, kwargs in self._examples:
            module(*args, **kwargs)


def describe_path(path: tuple) -> str:
    """PyTorch's way of naming an input: ``args[0]``, ``kwargs['mask']``, ``args[1][0]``."""
    head, *rest = path
    text = f"args[{rest[0]}]" if head == 0 else f"kwargs[{rest[0]!r}]"
    return text + "".join(f"[{key!r}]" for key in rest[1:])


__all__ = ["Dim", "dims", "DynamicAxes", "parse", "describe_path", "ShapesCollection", "AdditionalInputs"]
