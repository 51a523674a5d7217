"""Fast paths for the hottest calls: elementwise ops on tensors of one dtype and device.

The generic ``dispatcher.call`` validates everything on every call. Most calls in a
training loop repeat the same (op, device, dtype) combination, so the first call of a
combination runs the generic checks once and caches what they concluded (the kernel
and the output dtype); later calls only re-check shapes (cached too) and go straight to
the kernel. Anything unusual (mixed dtypes or devices, autograd recording, keyword
arguments) falls back to the generic path, which raises the proper errors.
"""
from __future__ import annotations

from .dispatcher import _check_dtypes, _promote, call, hooks, resolve
from .errors import EmberError
from .meta import broadcast_shapes
from .registry import get_backend
from .schema import REQUIRED, OpDef

_MISS = object()


def eligible(op: OpDef) -> bool:
    """Elementwise ops with one or two ``Tensor`` inputs first and only defaulted attributes after."""
    if op.category != "elementwise":
        return False
    tensors = [p for p in op.params if p.is_tensor]
    return (len(tensors) in (1, 2) and all(p.type == "Tensor" for p in tensors)
            and all(p.is_tensor for p in op.params[:len(tensors)])
            and all(p.default is not REQUIRED for p in op.params[len(tensors):]))


def _plan(op: OpDef, device, dtype, scalar_type=None):
    """(kernel, defaults, out dtype) for a same-dtype call, or None when the generic path must run."""
    try:
        backend = get_backend(device.type)
        kind, kernel = resolve(op, backend, device.type)
        if kind != "kernel":
            return None
        tensor = hooks.wrap(_ProbeArray(), dtype, device)
        values = [tensor] * len(op.tensor_positions)
        scalars = []
        if scalar_type is not None:
            values[-1] = scalar_type(1)
            scalars = [values[-1]]
        values += [p.default for p in op.params[len(values):]]
        tensors = [v for v in values if v is tensor]
        compute, out = _promote(op, values, tensors, scalars)
        if compute is not dtype or isinstance(out, tuple):
            return None
        if scalar_type is not None and not getattr(backend, "accepts_python_scalars", False):
            return None
        _check_dtypes(op, compute, out, tensors, backend, device)
    except EmberError:
        return None
    return kernel, tuple(p.default for p in op.params[len(op.tensor_positions):]), out


class _ProbeArray:
    """Stands in for a one-dimensional native array while a plan is worked out."""
    shape = (1,)


def make_unary(op: OpDef):
    plans: dict = {}
    tensor_type = hooks.tensor_type
    wrap = hooks.wrap

    def function(*args, **kwargs):
        if len(args) == 1 and not kwargs:
            a = args[0]
            if a.__class__ is tensor_type and not a.requires_grad:
                key = (a._device, a._dtype)
                plan = plans.get(key, _MISS)
                if plan is _MISS:
                    plan = plans[key] = _plan(op, a._device, a._dtype)
                if plan is not None:
                    kernel, extra, out = plan
                    return wrap(kernel(a._data, *extra), out, a._device)
        return call(op, args, kwargs)
    return function


def make_binary(op: OpDef):
    plans: dict = {}
    tensor_type = hooks.tensor_type
    wrap = hooks.wrap
    name = op.name

    def function(*args, **kwargs):
        if len(args) == 2 and not kwargs:
            a, b = args
            if a.__class__ is tensor_type and not a.requires_grad:
                if b.__class__ is tensor_type:
                    if b._device is a._device and b._dtype is a._dtype and not b.requires_grad:
                        key = (a._device, a._dtype)
                        plan = plans.get(key, _MISS)
                        if plan is _MISS:
                            plan = plans[key] = _plan(op, a._device, a._dtype)
                        if plan is not None:
                            da, db = a._data, b._data
                            if da.shape != db.shape:
                                broadcast_shapes(name, da.shape, db.shape)
                            kernel, extra, out = plan
                            return wrap(kernel(da, db, *extra), out, a._device)
                elif b.__class__ is float or (b.__class__ is int and 0 <= b < 128):
                    key = (a._device, a._dtype, b.__class__)
                    plan = plans.get(key, _MISS)
                    if plan is _MISS:
                        plan = plans[key] = _plan(op, a._device, a._dtype, b.__class__)
                    if plan is not None:
                        kernel, extra, out = plan
                        return wrap(kernel(a._data, b, *extra), out, a._device)
        return call(op, args, kwargs)
    return function


def make_function(op: OpDef):
    """The fastest correct Python entry point for ``op``."""
    if eligible(op):
        return make_unary(op) if len(op.tensor_positions) == 1 else make_binary(op)
    return None
