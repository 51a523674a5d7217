"""The opt-in CPU fallback for primitives a backend has no kernel for.

``EMBER_FALLBACK=cpu`` in the environment, or ``ember.backends.set_fallback("cpu")``, makes such an
op copy its inputs to the CPU, run there and copy its results back, with a warning the first time
each (op, backend) pair does so. It is off by default: a silent round trip through host memory
hides a missing kernel and can cost far more than the op, so by default the op raises a
BackendError that names the op and the backend and says how to turn the fallback on.

View ops cannot fall back (their result must share memory with an input on the device), and
in-place ops write their result back with the device's own ``copy_``.
"""
from __future__ import annotations

import os
import warnings
from typing import Callable

from . import links, plan
from ..contract import registry
from .caller import caller_stacklevel
from ..schema.device import device as Device
from ..schema.errors import BackendError
from ..contract.flags import FLAGS
from ..schema import OPS, OpDef
from .transfer import transfer
from .user_kernels import missing_kernel

ENV_VAR = "EMBER_FALLBACK"
_CHOICES = ("cpu",)
_OFF = ("", "0", "off", "none")


_target: str | None = None
_warned: set[tuple[str, str]] = set()


def set_fallback(device_type: str | None) -> None:
    """Run ops a backend lacks on ``device_type`` (only ``"cpu"``), or raise for them (``None``, the default)."""
    global _target
    if device_type is not None and device_type not in _CHOICES:
        raise ValueError(f"set_fallback: expected {' or '.join(map(repr, _CHOICES))} or None, "
                         f"got {device_type!r}")
    _target = device_type
    plan.clear()  # plans made under the previous setting ran (or refused) the fallback


def get_fallback() -> str | None:
    """The device type missing ops fall back to, or None when the fallback is off."""
    return _target


def _from_environment() -> None:
    """Read EMBER_FALLBACK once, at import; a value it does not know warns and leaves the fallback off."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _OFF:
        return
    if value in _CHOICES:
        set_fallback(value)
        return
    warnings.warn(f"{ENV_VAR}={value!r} is not understood (expected {' or '.join(_CHOICES)}); "
                  f"the fallback stays off", RuntimeWarning, stacklevel=2)


def refuse_or_warn(op: OpDef, dev: Device) -> None:
    """Called while planning a primitive ``op`` that the backend of ``dev`` has no kernel for: raises
    unless the fallback is on and can run the op, and warns the first time each (op, backend) falls back."""
    target = _target
    if target is None or target == dev.type:
        if op.kernels is not None:  # a custom op: say where it has kernels
            raise BackendError(f"{missing_kernel(op, dev)}, or set {ENV_VAR}=cpu or call "
                               f"ember.backends.set_fallback('cpu') to run it on the CPU")
        raise BackendError(f"{op.name}: the {dev.type} backend has no kernel for this primitive op; set "
                           f"{ENV_VAR}=cpu or call ember.backends.set_fallback('cpu') to run it on the CPU "
                           f"(its inputs are copied there and its results back)")
    if op.mutates.__class__ is tuple and op.kernels is not None:
        raise BackendError(f"{missing_kernel(op, dev)}; the {target} fallback cannot run it, since it writes into "
                           f"its arguments ({', '.join(op.mutates)}), which stay on {dev}")
    if op.view:
        raise BackendError(f"{op.name}: the {dev.type} backend has no kernel for this view op, and the {target} "
                           f"fallback cannot run it: a view must share memory with its input on {dev}")
    if op.name == "copy_":
        raise BackendError(f"copy_: the {dev.type} backend has no kernel for copy_, which the {target} fallback "
                           f"needs to write results back")
    if FLAGS.warn_always or (op.name, dev.type) not in _warned:
        _warned.add((op.name, dev.type))
        warnings.warn(f"{op.name}: the {dev.type} backend has no kernel for this op; running it on {target} "
                      f"({ENV_VAR}={target}), copying its inputs there and its results back", RuntimeWarning,
                      stacklevel=caller_stacklevel())


def run_elsewhere(plan, values: list, run_op: Callable):
    """Run one call of ``plan`` (a fallback plan) on the fallback device through ``run_op``, the
    dispatcher's entry point, and bring the results back to the call's device."""
    op, dev = plan.op, plan.device
    recorder = links.recorder
    if op.mutates and plan.grad_on:
        recorder.check_mutation(op, values)  # refuses writes autograd cannot track, before any copy
    host = registry.resolve_device(_target)
    moved = [_moved(op, p, v, dev, host) for p, v in zip(op.params, values)]
    with recorder.no_grad():
        result = run_op(op, tuple(moved), {})
        if op.mutates:  # the host copy of the first input was written: write it into the device tensor
            destination = values[op.tensor_positions[0]]
            run_op(OPS["copy_"], (destination, _copy(result, host, dev)), {})
            outputs = destination
        elif isinstance(result, tuple):  # a named tuple (values, indices), or a plain one (split)
            items = [_copy(t, host, dev) for t in result]
            outputs = type(result)(*items) if hasattr(result, "_fields") else tuple(items)
        else:
            outputs = _copy(result, host, dev)
    if plan.records:
        recorder.record(plan, values, outputs)
    return outputs


def _moved(op, param, value, dev, host):
    """One bound argument as the host call takes it: tensors copied to ``host``, the device replaced."""
    Tensor = links.tensor.type
    if isinstance(value, Tensor):
        if value._device != dev:  # a zero-dim CPU operand, say
            return value
        return _copy(value, dev, host)
    if isinstance(value, (list, tuple)) and param.is_tensor:
        return [None if v is None else _moved(op, param, v, dev, host) for v in value]
    if param.type == "device?":
        return host
    if param.type == "Generator?" and value is not None:
        raise BackendError(f"{op.name}: the {dev.type} backend has no kernel for this op, and the {host.type} "
                           f"fallback cannot draw from a generator on {dev}; pass generator=None")
    return value


def _copy(t, source, destination):
    """A new tensor on ``destination`` with ``t``'s values; no autograd history."""
    native = transfer(t._data, t._dtype, source, destination)
    return links.tensor.wrap(native, t._dtype, destination)


_from_environment()
