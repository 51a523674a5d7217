"""``ember.onnx.export``: capture the model, follow its dynamic axes, lower every op, fold, check, write."""
from __future__ import annotations

import io
import os
import warnings
from typing import Any

import onnx

from ..compiler.graph import Value, leaves
from ..dispatch.execution import links
from ..serialization.atomic import atomic_path
from .errors import CheckerError, OnnxExporterError, SymbolicValueError
from .folding import fold_constants
from .lowering import Naming, lower
from . import DEFAULT_OPSET
from .options import TrainingMode
from ..export.symbolic import fixed_forms, follow_axes, tensor_leaves
from .tracing import capture

#: The opsets the lowerings are written for: LayerNormalization needs 17; onnxruntime 1.18+ runs up to 21.
MIN_OPSET, MAX_OPSET = 17, 21


def export(model, args: Any = (), f=None, *, kwargs: dict | None = None, export_params: bool = True,
           verbose: bool | None = None, input_names: list[str] | None = None, output_names: list[str] | None = None,
           opset_version: int | None = None, dynamic_axes: dict | None = None,
           keep_initializers_as_inputs: bool = False, training: TrainingMode = TrainingMode.EVAL,
           do_constant_folding: bool = True, dynamo: bool = False, external_data: bool = True,
           optimize: bool = True) -> onnx.ModelProto | None:
    """Export ``model`` called with ``args`` (a tensor, or a tuple whose last item may be a dict of keyword
    arguments, as in PyTorch) to ONNX, written to ``f`` (a path or a binary file object).

    ``dynamic_axes`` maps input and output names to ``{axis: label}`` (or a list of axes), as in PyTorch.
    Parameters and buffers become initializers named by their ``state_dict`` keys. ``dynamo``,
    ``external_data`` and ``optimize`` are accepted for PyTorch code and change nothing: Ember has one
    exporter. Returns None when ``f`` is given, else the ``onnx.ModelProto``.
    """
    opset = _opset(opset_version)
    args, kwargs = _split_args(args, kwargs)
    restore = _set_training(model, training)
    try:
        graph, tracer, _ = capture(model, args, kwargs)
        inputs = tensor_leaves((args, kwargs))
        names = _names(input_names, len(inputs), "input")
        result_values = [leaf for leaf in leaves(graph.result) if isinstance(leaf, Value)]
        if not result_values:
            raise OnnxExporterError("ember.onnx.export: the model returns no tensor, and an ONNX graph needs at "
                                    "least one output")
        outputs = _names(output_names, len(result_values), "output")
        input_axes, output_axes = _dynamic_axes(dynamic_axes, names, outputs)
        by_path = {path: name for (path, _), name in zip(inputs, names)}
        path_of = {name: path for path, name in by_path.items()}
        if input_axes:
            forms = follow_axes(lambda a, k: capture(model, a, k)[0], args, kwargs, graph,
                                {path_of[n]: axes for n, axes in input_axes.items()},
                                describe=lambda path: by_path[path], who="ember.onnx.export", error=SymbolicValueError,
                                ranges={s: (1, None) for axes in input_axes.values() for s in axes.values()})
        else:
            forms = fixed_forms(graph)
        naming = Naming(inputs=by_path, outputs=outputs, input_axes=input_axes, output_axes=output_axes,
                        parameter_names=_parameter_names(model), export_params=export_params,
                        keep_initializers_as_inputs=keep_initializers_as_inputs)
        shapes = {name: (tuple(t.shape), t.dtype) for (_, t), name in zip(inputs, names)}
        g = lower(graph, forms, naming, opset, tracer.scopes, shapes)
    finally:
        restore()
    if do_constant_folding:
        fold_constants(g)
    from .. import __version__
    proto = g.model(type(model).__name__, __version__)
    _check(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is None:
        return proto
    _write(proto, f)
    return None


def _opset(requested: int | None) -> int:
    if requested is None:
        return DEFAULT_OPSET
    if not isinstance(requested, int) or not MIN_OPSET <= requested <= MAX_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version {requested!r} is not supported; Ember writes opsets "
                         f"{MIN_OPSET} to {MAX_OPSET}")
    return requested


def _split_args(args, kwargs: dict | None) -> tuple[tuple, dict]:
    """PyTorch's conventions: a lone tensor is one argument; a dict last in the tuple holds keyword arguments."""
    kwargs = dict(kwargs or {})
    if isinstance(args, links.tensor.type):
        return (args,), kwargs
    if not isinstance(args, tuple):
        args = (args,)
    if args and isinstance(args[-1], dict):
        kwargs = {**args[-1], **kwargs}
        args = args[:-1]
    return args, kwargs


def _set_training(model, training: TrainingMode):
    was = getattr(model, "training", None)
    if was is None or training == TrainingMode.PRESERVE:
        return lambda: None
    model.train(training == TrainingMode.TRAINING)
    return lambda: model.train(was)


def _names(given: list | None, count: int, prefix: str) -> list[str]:
    given = list(given or [])
    if len(given) > count:
        raise ValueError(f"ember.onnx.export: {len(given)} {prefix} names given for {count} {prefix}s")
    if len(set(given)) != len(given):
        raise ValueError(f"ember.onnx.export: {prefix} names must be unique, got {given}")
    return given + [f"{prefix}_{i}" for i in range(len(given), count)]


def _dynamic_axes(spec: dict | None, inputs: list, outputs: list) -> tuple[dict, dict]:
    """``{name: {axis: label}}`` for inputs and for outputs; a list of axes gets PyTorch's generated labels."""
    input_axes, output_axes = {}, {}
    for name, axes in (spec or {}).items():
        if isinstance(axes, (list, tuple)):
            axes = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        elif not isinstance(axes, dict):
            raise TypeError(f"ember.onnx.export: dynamic_axes['{name}'] must be a dict or a list of axes")
        if name in inputs:
            input_axes[name] = dict(axes)
        elif name in outputs:
            output_axes[name] = dict(axes)
        else:
            warnings.warn(f"ember.onnx.export: dynamic_axes names '{name}', which is neither an input "
                          f"({inputs}) nor an output ({outputs}); it is ignored")
    return input_axes, output_axes


def _parameter_names(model) -> dict:
    names = {}
    for method in ("named_parameters", "named_buffers"):
        for name, tensor in (getattr(model, method)() if hasattr(model, method) else ()):
            names.setdefault(id(tensor), name)
    return names


def _check(proto: onnx.ModelProto) -> None:
    try:
        onnx.checker.check_model(proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise CheckerError(f"ember.onnx.export: the written model fails onnx.checker.check_model: {error}") from None


def _write(proto: onnx.ModelProto, f) -> None:
    try:
        data = proto.SerializeToString()
    except ValueError as error:  # protobuf's 2 GB limit
        raise OnnxExporterError(f"ember.onnx.export: the model does not fit one ONNX file ({error})") from None
    if isinstance(f, (str, os.PathLike)):
        with atomic_path(f) as temp, open(temp, "wb") as out:  # atomic_path made (and locks) the file
            out.write(data)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ember.onnx.export: f must be a path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("ember.onnx.export: f must be opened in binary mode")
    f.write(data)


__all__ = ["export", "MIN_OPSET", "MAX_OPSET"]
