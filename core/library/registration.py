"""``torch.library``'s registration functions: each sets one part of a custom op's declaration.

``register_kernel`` (a function on tensors per device type), ``register_fake`` (output shapes and dtypes on fake
tensors), ``register_autograd`` (backward and setup_context), ``register_autocast`` (a dtype to cast to, or one of
Ember's autocast categories), ``register_vmap`` (a batching rule), ``register_torch_dispatch`` (a handler for one
dispatch mode class) and Ember's ``register_onnx`` (the ONNX lowering). Each takes the op as its qualified name,
its ``CustomOpDef`` or ``ember.ops.<ns>.<name>``, works as a decorator where PyTorch's does, and with ``lib=``
belongs to that ``Library``, whose ``_destroy()`` takes it back.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

from ..dispatch.contract import registry
from ..dispatch.execution.modes import DispatchMode
from ..dispatch.schema import AUTOCAST_CATEGORIES, OpDef
from ..dispatch.schema.dtypes import as_dtype
from .definition import Definition, find
from .namespace import OpOverloadPacket


def resolve(op, who: str) -> Definition:
    """The custom op ``op`` names: a qualified name, a ``CustomOpDef``, ``ember.ops.<ns>.<name>`` or its OpDef."""
    definition = getattr(op, "_definition", None)
    if definition is not None:
        return definition
    if isinstance(op, OpOverloadPacket):
        op = op.op.name
    elif isinstance(op, OpDef):
        op = op.name
    if not isinstance(op, str):
        raise ValueError(f"{who}({op!r}): expected a custom op (its 'namespace::name', its CustomOpDef or "
                         f"ember.ops.namespace.name), got {type(op).__name__}")
    return find(op, who)


def device_keys(device_types: str | Sequence[str] | None, qualname: str, who: str) -> list:
    """Registration keys for ``device_types``: device types Ember knows, "privateuse1", or None (every type)."""
    if device_types is None or isinstance(device_types, str):
        device_types = [device_types]
    known = registry.known_device_types()
    keys = []
    for device_type in device_types:
        if device_type is None or device_type == "privateuse1":
            keys.append(device_type)
            continue
        if not isinstance(device_type, str) or device_type not in known:
            raise ValueError(f"{who}: {qualname}: unknown device type {device_type!r} (Ember's device types: "
                             f"{', '.join(sorted(known))}; None for every device type)")
        keys.append(device_type)
    return keys


def _decorator_or_call(func: Callable | None, register: Callable[[Callable], Any]):
    """PyTorch's convention: with ``func`` register it now, without return a decorator."""
    if func is None:
        def decorator(fn):
            register(fn)
            return fn
        return decorator
    register(func)
    return None


def register_kernel(op, device_types: str | Sequence[str] | None, func: Callable | None = None, /, *,
                    lib=None):
    """The op's implementation for ``device_types`` ("cpu", "cuda", "opencl", a plugin's device type, None for
    every device type): a function on Ember tensors with the op's signature, returning new tensors."""
    definition = resolve(op, "register_kernel")
    keys = device_keys(device_types, definition.qualname, "register_kernel")

    def register(fn):
        if not callable(fn):
            raise TypeError(f"register_kernel: {definition.qualname}: expected a function, got {type(fn).__name__}")
        for key in keys:
            definition.register("kernels", fn, key, lib)
    return _decorator_or_call(func, register)


def register_fake(op, func: Callable | None = None, /, *, lib=None, _stacklevel: int = 1, allow_override: bool = True):
    """The op's fake function: given fake tensors (real shapes, dtypes and devices, no values), it returns tensors
    of its outputs' shapes, dtypes and devices, made with Ember ops (``ember.empty_like(x)``, ``x.new_empty``)."""
    definition = resolve(op, "register_fake")

    def register(fn):
        if not allow_override and definition.fake is not None:
            raise RuntimeError(f"register_fake: {definition.qualname} already has a fake function")
        definition.register("fake", fn, owner=lib)
    return _decorator_or_call(func, register)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None, lib=None) -> None:
    """The op's backward formula: ``setup_context(ctx, inputs, output)`` saves what ``backward(ctx, *grads)``
    needs; ``backward`` returns one gradient per input (None for inputs that are not tensors)."""
    definition = resolve(op, "register_autograd")
    if definition.mutated:
        raise RuntimeError(f"Cannot register autograd formula for non-functional operator {definition.qualname} "
                           f"with schema {definition.schema.text}. Please create a functional operator and register "
                           f"an autograd formula for that.")
    if not callable(backward) or (setup_context is not None and not callable(setup_context)):
        raise TypeError(f"register_autograd: {definition.qualname}: backward and setup_context must be functions")
    definition.register("autograd", (backward, setup_context), owner=lib)


def register_autocast(op, device_type: str, cast_inputs, /, *, lib=None):
    """Under autocast on ``device_type``, cast the op's floating inputs (float64 aside) to ``cast_inputs`` and run
    it with autocast off, as PyTorch does. ``cast_inputs`` may also be one of Ember's autocast categories: "lower"
    (the region's dtype), "float32", "promote" (the widest among the inputs) or "banned" (refused)."""
    definition = resolve(op, "register_autocast")
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    device_keys(device_type, definition.qualname, "register_autocast")
    if isinstance(cast_inputs, str) and cast_inputs in AUTOCAST_CATEGORIES:
        value = cast_inputs
    else:
        value = as_dtype(cast_inputs)
        if not value.is_floating_point:
            raise ValueError(f"register_autocast: {definition.qualname}: cast_inputs must be a floating dtype or "
                             f"one of {AUTOCAST_CATEGORIES}, got {value.name}")
    definition.register("autocast", value, device_type, lib)


def register_vmap(op, func: Callable | None = None, /, *, lib=None):
    """The op's batching rule for ``ember.vmap``: ``func(info, in_dims, *args, **kwargs) -> (output, out_dims)``,
    with ``info.batch_size`` and ``info.randomness``; arguments come with their batch dim first (``in_dims`` 0)
    or unbatched (None)."""
    definition = resolve(op, "register_vmap")
    return _decorator_or_call(func, lambda fn: definition.register("vmap", fn, owner=lib))


def register_torch_dispatch(op, torch_dispatch_class: type, func: Callable | None = None, /, *, lib=None):
    """``func(mode, func, types, args, kwargs)`` handles the op's calls in place of the ``__torch_dispatch__`` of
    modes of class ``torch_dispatch_class`` (an ``ember.utils._python_dispatch.TorchDispatchMode`` subclass;
    Ember has no tensor subclasses with ``__torch_dispatch__``)."""
    definition = resolve(op, "register_torch_dispatch")
    if not (isinstance(torch_dispatch_class, type) and issubclass(torch_dispatch_class, DispatchMode)):
        raise ValueError(f"register_torch_dispatch: {definition.qualname}: expected a TorchDispatchMode subclass "
                         f"(Ember's dispatch modes; it has no Tensor subclasses with __torch_dispatch__), got "
                         f"{torch_dispatch_class!r}")
    return _decorator_or_call(func, lambda fn: definition.register("dispatch_rules", fn, torch_dispatch_class, lib))


def register_onnx(op, lowering: str | Callable | None = None, /, *, lib=None):
    """How ``ember.onnx.export`` writes the op (Ember's, as its own ops declare ``onnx=``): an ONNX operator's
    name where the op maps onto it input for input, or ``lowering(g, **bound)`` emitting nodes through the
    exporter's graph builder ``g`` (``g.op("Gelu", x)``) and returning the output name(s)."""
    definition = resolve(op, "register_onnx")
    if isinstance(lowering, str):
        definition.register("onnx", lowering, owner=lib)
        return None
    return _decorator_or_call(lowering, lambda fn: definition.register("onnx", fn, owner=lib))


def impl_abstract(qualname, func: Callable | None = None, *, lib=None, _stacklevel: int = 1):
    """Deprecated: ``register_fake``'s name before PyTorch 2.4."""
    warnings.warn("`ember.library.impl_abstract` was renamed to `ember.library.register_fake`. Please use that "
                  "instead; it will be removed as in PyTorch.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


__all__ = ["register_kernel", "register_fake", "register_autograd", "register_autocast", "register_vmap",
           "register_torch_dispatch", "register_onnx", "impl_abstract", "resolve", "device_keys"]
