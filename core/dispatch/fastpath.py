"""Fast paths for the hottest calls: elementwise ops on tensors of one dtype and device.

The generic ``dispatcher.call`` validates everything on every call. Most calls in a
training loop repeat the same (op, device, dtype) combination, so the first call of a
combination runs the generic checks once and caches what they concluded (the kernel
and the output dtype); later calls only re-check shapes (cached too) and go straight to
the kernel. Anything unusual (mixed dtypes or devices, autograd recording, keyword
arguments) falls back to the generic path, which raises the proper errors.

The Tensor type and its constructor are read from ``hooks`` on each call, not when the
functions are made: ``ember.dispatch`` is imported (and these functions made) before the
Tensor class exists, so a copy taken at creation would be a placeholder forever.
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


def _plan(op: OpDef, device, dtype, scalar_type=None, scalar_first=False):
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
            at = 0 if scalar_first else -1
            values[at] = scalar_type(1)
            scalars = [values[at]]
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


def _recorder(op: OpDef):
    """How the fast path records autograd: None when the op never records, False when recording needs
    the generic path (a composite that must decompose), else True: ``hooks.record_elementwise`` records
    (it checks the grad mode itself)."""
    if not op.differentiable:
        return None
    return not (op.kind == "composite" and op.derivative is None)


def make_unary(op: OpDef):
    plans: dict = {}
    recorder = _recorder(op)

    def function(*args, **kwargs):
        if len(args) == 1 and not kwargs:
            a = args[0]
            if a.__class__ is hooks.tensor_type and (recorder is not False or not a.requires_grad):
                key = (a._device, a._dtype)
                plan = plans.get(key, _MISS)
                if plan is _MISS:
                    plan = plans[key] = _plan(op, a._device, a._dtype)
                if plan is not None:
                    kernel, extra, out_dtype = plan
                    out = hooks.wrap(kernel(a._data, *extra), out_dtype, a._device)
                    if a.requires_grad and recorder:
                        hooks.record_elementwise(op, [a, *extra], (a,), out)
                    return out
        return call(op, args, kwargs)
    return function


def make_binary(op: OpDef):
    plans: dict = {}
    name = op.name
    recorder = _recorder(op)

    def function(*args, **kwargs):
        if len(args) == 2 and not kwargs:
            a, b = args
            tensor_type, wrap = hooks.tensor_type, hooks.wrap
            if a.__class__ is tensor_type:
                if b.__class__ is tensor_type:
                    if b._device is a._device and b._dtype is a._dtype and (
                            recorder is not False or not (a.requires_grad or b.requires_grad)):
                        key = (a._device, a._dtype)
                        plan = plans.get(key, _MISS)
                        if plan is _MISS:
                            plan = plans[key] = _plan(op, a._device, a._dtype)
                        if plan is not None:
                            da, db = a._data, b._data
                            if da.shape != db.shape:
                                broadcast_shapes(name, da.shape, db.shape)
                            kernel, extra, out_dtype = plan
                            out = wrap(kernel(da, db, *extra), out_dtype, a._device)
                            if (a.requires_grad or b.requires_grad) and recorder:
                                hooks.record_elementwise(op, [a, b, *extra], (a, b), out)
                            return out
                elif (b.__class__ is float or (b.__class__ is int and 0 <= b < 128)) and (
                        recorder is not False or not a.requires_grad):
                    key = (a._device, a._dtype, b.__class__)
                    plan = plans.get(key, _MISS)
                    if plan is _MISS:
                        plan = plans[key] = _plan(op, a._device, a._dtype, b.__class__)
                    if plan is not None:
                        kernel, extra, out_dtype = plan
                        out = wrap(kernel(a._data, b, *extra), out_dtype, a._device)
                        if a.requires_grad and recorder:
                            hooks.record_elementwise(op, [a, b, *extra], (a, None), out)
                        return out
            elif b.__class__ is tensor_type and (a.__class__ is float or (a.__class__ is int and 0 <= a < 128)) \
                    and (recorder is not False or not b.requires_grad):
                key = (b._device, b._dtype, a.__class__, 0)
                plan = plans.get(key, _MISS)
                if plan is _MISS:
                    plan = plans[key] = _plan(op, b._device, b._dtype, a.__class__, scalar_first=True)
                if plan is not None:
                    kernel, extra, out_dtype = plan
                    out = wrap(kernel(a, b._data, *extra), out_dtype, b._device)
                    if b.requires_grad and recorder:
                        hooks.record_elementwise(op, [a, b, *extra], (None, b), out)
                    return out
        return call(op, args, kwargs)
    return function


def make_function(op: OpDef):
    """The fastest correct Python entry point for ``op``."""
    if eligible(op):
        return make_unary(op) if len(op.tensor_positions) == 1 else make_binary(op)
    return None
