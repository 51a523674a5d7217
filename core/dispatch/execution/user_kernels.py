"""Kernels written on Ember tensors: how a custom op's function (``ember.library``) runs as a plan's kernel.

A plan's kernel takes native arrays and returns native arrays (docs/backends.md), so that the executor and the
programs ``ember.compile`` writes call every kernel alike. A custom op's kernel is a user's function on Ember
tensors instead: it may call other ops, or go to NumPy and back. ``kernel`` picks the function a call runs on
its device (``OpDef.kernels``) and makes, once per plan, the native-array kernel around it: each native argument
is wrapped as a tensor of the dtype the plan validated, the function runs with grad mode off (autograd records
the custom op as one node with its own derivative, and a tracer recording the call sees none of its inner
calls), and its results are checked against the plan (count, dtype, device; no input, nor a view of one, given
back) before their natives are returned.

Which function: one registered for the device type; else a kernel the device's backend brings for the op under
its name (a plugin shipping kernels for a custom op, on native arrays like any other kernel); else one
registered for ``"privateuse1"`` (every device type but cpu and cuda); else one for every device type (None).
"""
from __future__ import annotations

from typing import Any, Callable

from . import links
from ..schema.errors import EmberError, describe

#: device types that ``"privateuse1"`` kernels do not cover (PyTorch's own backends; the rest are plugins)
_BUILT_IN = ("cpu", "cuda")


def function_for(op, device_type: str) -> Callable | None:
    """The user's function ``op`` runs on ``device_type`` when the backend brings no kernel of its own."""
    kernels = op.kernels
    fn = kernels.get(device_type)
    if fn is None and device_type not in _BUILT_IN:
        fn = kernels.get("privateuse1")
    return fn if fn is not None else kernels.get(None)


def kernel(op, backend, values: list, dev, out) -> Callable | None:
    """The kernel a plan of custom op ``op`` runs for validated ``values`` on ``dev`` (``out``: the plan's result
    dtypes): the device type's own function, else the backend's kernel for the op (if any), else a function for
    several device types; None where there is none (the plan then takes the composite or the fallback, or
    refuses)."""
    fn = op.kernels.get(dev.type)
    if fn is None:
        native = backend.kernels.get(op.name)
        if native is not None:
            return native
        fn = function_for(op, dev.type)
        if fn is None:
            return None
    return on_natives(op, fn, values, dev, out, backend)


def registered(op) -> str:
    """The device types ``op`` has kernels for, in words (for errors)."""
    names = ["every device type" if k is None else "every device type but cpu and cuda" if k == "privateuse1"
             else k for k in op.kernels]
    return ", ".join(sorted(names)) or "none"


def missing_kernel(op, dev) -> str:
    """Why a call of custom op ``op`` on ``dev`` has nothing to run."""
    return (f"{op.name}: no kernel for device type '{dev.type}' (kernels are registered for: {registered(op)}); "
            f"register one with ember.library.register_kernel('{op.name}', '{dev.type}', fn)")


def on_natives(op, fn: Callable, values: list, dev, out, backend) -> Callable[..., Any]:
    """``fn`` (on tensors) as a kernel on the native arrays of calls validated like ``values`` (see the module
    docstring)."""
    Tensor, wrap = links.tensor.type, links.tensor.wrap
    recorder = links.recorder
    singles, lists = [], []
    for i in op.tensor_positions:
        v = values[i]
        if isinstance(v, Tensor):
            singles.append((i, v._dtype))
        elif isinstance(v, (list, tuple)):
            lists.append((i, [None if t is None else t._dtype for t in v]))
    # the plan hands the kernel a device's index and the result dtype for parameters named device and dtype
    # (arguments.constant_arguments): the user's function gets the values the call passed, the same for the plan
    restored = tuple((i, values[i]) for i in op.special_positions if i is not None)
    first_keyword = next((i for i, p in enumerate(op.params) if p.kw_only), len(op.params))
    keywords = tuple((i, op.params[i].name) for i in range(first_keyword, len(op.params)))
    void = op.outputs == ()
    many = len(op.outputs) > 1 or op.outputs == ("*",)
    dtypes = out if isinstance(out, tuple) else (out,)
    storage_id = backend.storage_id
    state = recorder.state

    def call(args: list):
        """The user's function on the call's tensors, grad mode off (its inner calls are its own)."""
        for i, dt in singles:
            args[i] = wrap(args[i], dt, dev)
        for i, dts in lists:
            args[i] = [None if a is None else wrap(a, d, dev) for a, d in zip(args[i], dts)]
        for i, value in restored:
            args[i] = value
        enabled = state.enabled
        state.enabled = False
        try:
            if keywords:
                return fn(*args[:first_keyword], **{name: args[i] for i, name in keywords})
            return fn(*args)
        finally:
            state.enabled = enabled

    def run(*args):
        args = list(args)
        inputs = {storage_id(args[i]) for i, _ in singles}
        for i, _ in lists:
            inputs.update(storage_id(a) for a in args[i] if a is not None)
        result = call(args)
        if void:
            if result is not None:
                raise EmberError(f"{op.name}: its {dev.type} kernel returned {type(result).__name__}, but the op "
                                 f"returns nothing (its schema says -> ())")
            return None
        items = _items(op, dev, result, many, len(dtypes))
        natives = []
        for k, t in enumerate(items):
            expected = dtypes[k] if k < len(dtypes) else dtypes[-1]
            if not isinstance(t, Tensor) or t._dtype is not expected or t._device != dev:
                got = describe(t) if isinstance(t, Tensor) else type(t).__name__
                raise EmberError(f"{op.name}: its {dev.type} kernel returned {got} as output {k}, but the call "
                                 f"was validated to return a {expected.name} tensor on {dev} (what the op's fake "
                                 f"function, register_fake, gives); make the two agree")
            natives.append(t._data)
        _check_fresh(op, dev, natives, inputs, storage_id)
        return tuple(natives) if many else natives[0]

    run.on_tensors = fn  # a kernel on tensors: plans run it as it is (no float32 widening of storage dtypes)
    run.__name__ = f"{op.name}[{dev.type}]"
    return run


def _check_fresh(op, dev, natives: list, inputs: set, storage_id: Callable) -> None:
    """An error naming the op where an output shares memory with an input or another output (PyTorch refuses
    that too: autograd and compiled programs take a custom op's outputs for new tensors)."""
    seen = set()
    for k, native in enumerate(natives):
        storage = storage_id(native)
        if storage in inputs or storage in seen:
            raise EmberError(f"{op.name}: its {dev.type} kernel returned an input, a view of one or another output "
                             f"as output {k}; the outputs of a custom op must be new tensors that share no memory "
                             f"with its inputs or with each other (return a clone)")
        seen.add(storage)


def _items(op, dev, result, many: bool, count: int) -> tuple:
    """The outputs a kernel returned, as a tuple; an error naming the op unless there are as many as validated."""
    if not many:
        return (result,)
    if not isinstance(result, (tuple, list)):
        raise EmberError(f"{op.name}: its {dev.type} kernel returned {type(result).__name__}, but the op returns "
                         f"{count} tensors (a tuple or list)")
    if len(result) != count:
        raise EmberError(f"{op.name}: its {dev.type} kernel returned {len(result)} tensors, but the call was "
                         f"validated to return {count} (what the op's fake function, register_fake, gives)")
    return tuple(result)


__all__ = ["kernel", "function_for", "on_natives", "missing_kernel", "registered"]
