"""The per-call path: bind arguments, validate devices, dtypes and shapes, pick the kernel, wrap.

Everything an op needs checked is checked here, once, before any kernel runs, so
kernels stay free of Python-side validation. Kernel resolution is cached per
(op, device type); pluggy is not involved after registration.
"""
from __future__ import annotations

import operator
from typing import Any

from . import fallback, registry
from .device import device as Device
from .dtypes import _default_float, as_dtype, bool_, dtype as DType
from .errors import DeviceError, DtypeError, ShapeError, describe
from .promotion import result_type_of, scalar_dtype
from .rules import PURE_RULES
from .schema import REQUIRED, OpDef

_NUMBER = (bool, int, float)


class _Hooks:
    """Set by the layers above dispatch (``ember`` core, ``ember.autograd``) at import."""
    tensor_type: type = object
    wrap = None  # (native, dtype, device) -> Tensor
    wrap_view = None  # (native, dtype, device, base Tensor) -> Tensor sharing base's version counter
    record = None  # autograd: (op, values, outputs) -> None, called when grad mode records
    record_elementwise = None  # autograd: (op, values, tensor inputs, output) -> None; fast path, checks grad mode
    record_transfer = None  # autograd: (source, copy) -> None for device copies
    before_mutation = None  # autograd: (op, values) -> None, refuses in-place writes it cannot track
    no_grad = None  # autograd: a context manager that turns recording off
    grad_enabled = None  # () -> bool
    default_device: Device | None = None
    fallback = None  # () -> str | None: device type to run missing ops on


hooks = _Hooks()


# -- binding ---------------------------------------------------------------------------------

def bind(op: OpDef, args: tuple, kwargs: dict) -> list:
    """Positional and keyword arguments -> one value per parameter, defaults filled."""
    if not kwargs and op.min_args <= len(args) <= op.positional_count:
        return [*args, *op.default_values[len(args):]]
    params = op.params
    if len(args) > len(params) or (args and len(args) > sum(not p.kw_only for p in params)):
        positional = sum(not p.kw_only for p in params)
        raise TypeError(f"{op.name}() takes {positional} positional argument(s) but {len(args)} were given; "
                        f"signature: {op.signature}")
    values = list(args)
    for p in params[len(args):]:
        if p.name in kwargs:
            values.append(kwargs[p.name])
        elif p.default is not REQUIRED:
            values.append(p.default)
        else:
            raise TypeError(f"{op.name}() missing required argument '{p.name}'; signature: {op.signature}")
    if kwargs:
        names = op.param_index
        for key in kwargs:
            index = names.get(key)
            if index is None:
                raise TypeError(f"{op.name}() got an unexpected keyword argument '{key}'; "
                                f"signature: {op.signature}")
            if index < len(args):
                raise TypeError(f"{op.name}() got multiple values for argument '{key}'")
    return values


# -- attribute conversion --------------------------------------------------------------------

def _as_int(op, name, v):
    if isinstance(v, bool):
        raise TypeError(f"{op.name}(): argument '{name}' must be int, not bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op.name}(): argument '{name}' must be int, not {type(v).__name__}") from None


def _as_int_list(op, name, v):
    if isinstance(v, (list, tuple)):
        return tuple(_as_int(op, name, x) for x in v)
    return (_as_int(op, name, v),)


def wrap_dim(op_name: str, dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) made non-negative; 0-d tensors accept -1 and 0 like PyTorch."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"{op_name}: dim {dim} is out of range for a tensor with {ndim} dim(s) "
                         f"(expected {-rank}..{rank - 1})")
    return dim % rank


def _all_ints(values: tuple) -> bool:
    for x in values:
        if x.__class__ is not int:
            return False
    return True


_PLAIN = {("int", int), ("int?", int), ("bool", bool), ("bool?", bool), ("float", float), ("float?", float),
          ("str", str), ("str?", str), ("Scalar", int), ("Scalar", float), ("Scalar?", int), ("Scalar?", float)}


def _convert(op: OpDef, p, v, ndim: int):
    t = p.type
    if v is p.default and p.default_is_canonical:
        return v
    if (t, v.__class__) in _PLAIN:
        return v
    if t == "dim" and v.__class__ is int and 0 <= v < ndim:
        return v
    if v.__class__ is tuple and t in ("int[]", "int[]?") and _all_ints(v):
        return v  # sizes from tensor.shape or a literal: already what the kernels take
    if v is None:
        if p.optional or t in ("Any",):
            return None
        raise TypeError(f"{op.name}(): argument '{p.name}' ({t}) must not be None")
    if t in ("int", "int?"):
        return _as_int(op, p.name, v)
    if t in ("dim", "dim?"):
        return wrap_dim(op.name, _as_int(op, p.name, v), ndim)
    if t == "dim[]?":
        dims = tuple(wrap_dim(op.name, d, ndim) for d in _as_int_list(op, p.name, v))
        if len(set(dims)) != len(dims):
            raise ValueError(f"{op.name}: dim {tuple(v) if isinstance(v, (list, tuple)) else v} "
                             f"repeats a dimension")
        return dims
    if t in ("int[]", "int[]?"):
        return _as_int_list(op, p.name, v)
    if t in ("float", "float?"):
        if not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
            raise TypeError(f"{op.name}(): argument '{p.name}' must be float, not {type(v).__name__}")
        return float(v)
    if t in ("bool", "bool?"):
        if not isinstance(v, (bool, int)):
            raise TypeError(f"{op.name}(): argument '{p.name}' must be bool, not {type(v).__name__}")
        return bool(v)
    if t in ("Scalar", "Scalar?"):
        if isinstance(v, hooks.tensor_type):
            if v.numel() != 1:
                raise ValueError(f"{op.name}(): argument '{p.name}' must be a number or a one-element "
                                 f"tensor, got {describe(v)}")
            return v.item()
        if not isinstance(v, _NUMBER) and not hasattr(v, "__index__") and not hasattr(v, "__float__"):
            raise TypeError(f"{op.name}(): argument '{p.name}' must be a number, not {type(v).__name__}")
        return v if isinstance(v, _NUMBER) else (int(v) if hasattr(v, "__index__") else float(v))
    if t in ("dtype", "dtype?"):
        return as_dtype(v)
    if t == "device?":
        try:
            return registry.resolve_device(v)
        except DeviceError as exc:
            raise DeviceError(f"{op.name}: {exc}") from None
    if t in ("str", "str?"):
        if not isinstance(v, str):
            raise TypeError(f"{op.name}(): argument '{p.name}' must be str, not {type(v).__name__}")
        return v
    return v  # Generator? and Any are converted where they are used


# -- the call --------------------------------------------------------------------------------

def _device_mismatch(op: OpDef, tensors) -> DeviceError:
    devices = sorted({str(t._device) for t in tensors})
    return DeviceError(f"{op.name}: expected all tensors on one device, got {' and '.join(devices)} "
                       f"({', '.join(describe(t) for t in tensors)})")


def _collect(op: OpDef, values: list):
    """Tensor operands, Python-number operands and the device. Moves zero-dim CPU tensors across."""
    Tensor = hooks.tensor_type
    if op.single_tensor:
        t = values[op.tensor_positions[0]]
        if t.__class__ is Tensor:
            return (t,), (), t._device
    tensors, scalars, dev = [], [], None
    for i in op.tensor_positions:
        v = values[i]
        p = op.params[i]
        if isinstance(v, Tensor):
            tensors.append(v)
        elif p.type == "Tensor[]":
            if not isinstance(v, (list, tuple)) or not all(isinstance(x, Tensor) for x in v):
                raise TypeError(f"{op.name}(): argument '{p.name}' must be a sequence of tensors, "
                                f"got {type(v).__name__}")
            if not v:
                raise ValueError(f"{op.name}(): expected a non-empty sequence of tensors")
            tensors.extend(v)
        elif v is None and p.optional:
            continue
        elif p.type == "Index?[]":
            if not isinstance(v, (list, tuple)) or not all(x is None or isinstance(x, Tensor) for x in v):
                raise TypeError(f"{op.name}(): argument '{p.name}' must be a sequence of tensors or None")
            tensors.extend(x for x in v if x is not None)
        elif p.type in ("Tensor", "Tensor?") and isinstance(v, _NUMBER):
            scalars.append(v)
        else:
            raise TypeError(f"{op.name}(): argument '{p.name}' must be a Tensor, not {type(v).__name__}")
    for t in tensors:
        if dev is None:
            dev = t._device
        elif t._device is not dev:
            dev = _reconcile_devices(op, tensors)
            break
    return tensors, scalars, dev


def _reconcile_devices(op: OpDef, tensors) -> Device:
    """Like PyTorch, a zero-dim CPU tensor may join tensors on another device; anything else is an error."""
    others = {t._device for t in tensors if not (t._device.type == "cpu" and t._data.shape == ())}
    if len(others) != 1:
        raise _device_mismatch(op, tensors)
    return next(iter(others))


def _promote(op: OpDef, values: list, tensors, scalars):
    positions = op.tensor_positions
    promoted = [v for i in positions if op.params[i].type in ("Tensor", "Tensor?", "Tensor[]")
                for v in (values[i] if isinstance(values[i], (list, tuple)) else (values[i],))
                if isinstance(v, hooks.tensor_type)]
    if promoted or scalars:
        dims = [t._dtype for t in promoted if t._data.shape != ()]
        zeros = [t._dtype for t in promoted if t._data.shape == ()]
        rt = result_type_of(dims, zeros, scalars)
    elif tensors:
        rt = tensors[0]._dtype
    else:
        rt = None
    return op.promotion(rt, op, values)


_ACCEPTS = {
    "all": lambda d: True,
    "numeric": lambda d: d is not bool_,
    "float": lambda d: d.is_floating_point,
    "integral": lambda d: not d.is_floating_point,
    "int": lambda d: d.kind == "int",
}


def _check_dtypes(op: OpDef, compute: DType | None, out, tensors, backend, dev: Device):
    if compute is not None and not _ACCEPTS[op.dtypes](compute):
        raise DtypeError(f"{op.name}: not supported for dtype {compute.name} (accepts {op.dtypes} dtypes); "
                         f"inputs: {', '.join(describe(t) for t in tensors) or 'none'}")
    supported = backend.supported_dtypes(dev.index)
    for d in (compute, *(out if isinstance(out, tuple) else (out,))):
        if d is not None and d not in supported:
            raise DtypeError(f"{op.name}: {dev} does not support {d.name}; it supports "
                             f"{', '.join(x.name for x in sorted(supported, key=lambda x: x._rank))}")


def resolve(op: OpDef, backend, device_type: str):
    """The kernel for (op, backend): the backend's own, else the composite. Cached."""
    impl = op.impl_cache.get(device_type)
    if impl is None:
        kernel = backend.kernels.get(op.name)
        if kernel is not None:
            impl = ("kernel", kernel)
        elif op.composite is not None:
            impl = ("composite", op.composite)
        else:
            impl = ("missing", None)
        op.impl_cache[device_type] = impl
    return impl


def _scalar_native(backend, value, dt: DType, index):
    full = backend.kernels["full"]
    return full((), value, dt, index)


# -- the validation cache ----------------------------------------------------------------------
#
# Validating a call (converting attributes, promotion, ``normalize``, ``meta``) looks only at the tensors'
# shapes, dtypes, devices and requires_grad, at the attribute values, and at the grad mode and default
# dtype; so its outcome is cached under exactly those, per op, and a repeated call (a training loop's)
# skips straight to the kernel. ``view``'s meta also reads the input's strides: an op that says so with
# ``layout_dependent`` gets them in its key. An op whose checks read tensor *values* (index range checks:
# embedding, cross_entropy, one_hot, gather, ...) cannot be cached: such checks dispatch other ops
# (``amin``/``amax``) or read values to the host, which bumps ``_activity``; an op seen doing so during
# its validation is excluded for good (``op.check_cache = None``). A check that reads values calls
# ``note_value_read`` itself, so that it is seen even where it answers from a memo (cross_entropy's targets).

_activity = 0  # calls of ``call`` plus host reads of tensor values: any change during a validation means it read data
_CHECK_CACHE_SIZE = 512
_KEY_ATOMS = frozenset({int, float, bool, str, type(None)})


def note_value_read() -> None:
    """Called where a tensor's values are read to the host (``item``, ``tolist``): a validation doing this is
    data-dependent and must not be cached."""
    global _activity
    _activity += 1


def _check_key(op: OpDef, values: list, grad_on: bool):
    """The validation cache key of this call, or None where the call cannot be cached."""
    Tensor = hooks.tensor_type
    key = [grad_on, _default_float[0]]
    append = key.append
    first = None
    for i in op.tensor_positions:
        v = values[i]
        if isinstance(v, Tensor):
            append(v._data.shape)
            append(v._dtype)
            append(v._device)
            append(v.requires_grad)
            if first is None:
                first = v
        elif v.__class__ in _KEY_ATOMS:
            append(v.__class__)  # a Python number: promotion looks at its kind, a check may look at its value
            append(v)
        else:
            return None  # lists of tensors: not cached
    if first is None:
        return None  # the device would come from the defaults
    for i in op.attr_positions:
        v = values[i]
        c = v.__class__
        if c is list or c is tuple:
            for x in v:
                if x.__class__ is not int and x.__class__ is not float:
                    return None
            append(tuple)
            append(tuple(v))
        elif c in _KEY_ATOMS or c is DType or c is Device:
            append(c)  # True, 1 and 1.0 are equal keys, but not equally valid arguments
            append(v)
        else:
            return None
    if op.layout_dependent:
        append(registry.get_backend(first._device.type).strides(first._data))
    return tuple(key)


def call(op: OpDef, args: tuple, kwargs: dict):
    """Run ``op`` on the given arguments: the one generic entry point of every op."""
    global _activity
    _activity += 1
    values = list(args) if not kwargs and len(args) == len(op.params) else bind(op, args, kwargs)
    grad_on = hooks.grad_enabled is not None and hooks.grad_enabled()
    cache = op.check_cache
    key = None
    if cache is not None:
        key = _check_key(op, values, grad_on)
        if key is not None:
            entry = cache.get(key)
            if entry is not None:
                attrs, dev, backend, compute, out, wants_grad = entry
                for i, v in zip(op.attr_positions, attrs):
                    values[i] = v
                return _run(op, values, dev, backend, compute, out, grad_on, wants_grad)
    before = _activity
    originals = [values[i] for i in op.tensor_positions] if key is not None else None
    tensors, scalars, dev = _collect(op, values)
    params = op.params
    ndim = len(tensors[0]._data.shape) if tensors else 0
    for i in op.attr_positions:
        values[i] = _convert(op, params[i], values[i], ndim)
    if dev is None:
        dev_index = op.param_index.get("device")
        dev = values[dev_index] if dev_index is not None and values[dev_index] is not None else None
        if dev is None:
            dev = hooks.default_device or registry.resolve_device("cpu")
    backend = registry.get_backend(dev.type)
    compute, out = _dtype_plan(op, values, tensors, scalars, backend, dev)
    if op.normalize is not None:
        op.normalize(op, values)
    op.meta(*values)  # validates shapes; raises ShapeError naming the op and operands
    wants_grad = any(t.requires_grad for t in tensors)
    if key is not None and op.check_cache is not None:
        if _activity != before:
            op.check_cache = None  # the checks read tensor values: never cache this op
        elif all(values[i] is t for i, t in zip(op.tensor_positions, originals)) and (
                resolve(op, backend, dev.type)[0] != "missing"):
            if len(cache) >= _CHECK_CACHE_SIZE:
                cache.clear()
            cache[key] = (tuple(values[i] for i in op.attr_positions), dev, backend, compute, out, wants_grad)
    return _run(op, values, dev, backend, compute, out, grad_on, wants_grad)


def _run(op: OpDef, values: list, dev: Device, backend, compute, out, grad_on: bool, wants_grad: bool):
    """The validated call: pick the implementation, run it, wrap and record."""
    kind, impl = resolve(op, backend, dev.type)
    needs_grad = grad_on and wants_grad and op.differentiable
    if needs_grad and op.kind == "composite" and op.derivative is None:
        kind, impl = "composite", op.composite  # decompose, so that every inner op records its node
    if kind == "composite":
        if needs_grad and op.derivative is not None:
            with hooks.no_grad():
                result = _named(op, impl(*values)) if len(op.outputs) > 1 else impl(*values)
            hooks.record(op, values, result)
            return result
        result = impl(*values)
        return _named(op, result) if len(op.outputs) > 1 else result
    if kind == "missing":  # raises unless the opt-in CPU fallback is on
        return fallback.missing_kernel(op, values, dev, needs_grad)
    if op.mutates and grad_on:
        hooks.before_mutation(op, values)
    natives = _natives(op, values, compute, out, backend, dev)
    result = impl(*natives)
    return _wrap_outputs(op, result, out, dev, values, hooks.record if needs_grad else None)


def _dtype_plan(op: OpDef, values, tensors, scalars, backend, dev: Device):
    """(compute dtype, output dtype) after checking both; cached when the rule looks only at dtypes."""
    key_params = PURE_RULES.get(op.promotion)
    if key_params is None:
        compute, out = _promote(op, values, tensors, scalars)
        _check_dtypes(op, compute, out, tensors, backend, dev)
        return compute, out
    if len(tensors) == 1 and not scalars and not key_params:  # the common single-tensor case, built quickly
        t = tensors[0]
        key = (dev, t._dtype, t._data.shape == ())
    else:
        key = (dev, *[(t._dtype, t._data.shape == ()) for t in tensors], *[s.__class__ for s in scalars],
               *[values[op.param_index[name]] for name in key_params])
    plan = op.plan_cache.get(key)
    if plan is None:
        compute, out = _promote(op, values, tensors, scalars)
        _check_dtypes(op, compute, out, tensors, backend, dev)
        plan = (compute, out)
        if len(op.plan_cache) < 256:
            op.plan_cache[key] = plan
    return plan


def _natives(op: OpDef, values: list, compute, out, backend, dev: Device) -> list:
    """Bound values as the kernel takes them: native arrays cast to ``compute``, devices as indices."""
    Tensor = hooks.tensor_type
    natives = list(values)
    cast = backend.kernels["to_dtype"]
    for i in op.tensor_positions:
        v = values[i]
        if v.__class__ is Tensor and v._device is dev and (compute is None or v._dtype is compute):
            natives[i] = v._data  # the common case: nothing to move or cast
            continue
        p = op.params[i]
        promote = compute is not None and p.type in ("Tensor", "Tensor?", "Tensor[]")
        if isinstance(v, Tensor):
            natives[i] = _native_of(v, dev, cast if promote and v._dtype is not compute else None, compute)
        elif isinstance(v, (list, tuple)):
            natives[i] = [None if t is None else
                          _native_of(t, dev, cast if promote and t._dtype is not compute else None, compute)
                          for t in v]
        elif isinstance(v, _NUMBER):
            natives[i] = _scalar_native(backend, v, compute or scalar_dtype(v), dev.index)
    device_at, generator_at, dtype_at = op.special_positions
    if device_at is not None:
        natives[device_at] = dev.index
    if generator_at is not None:
        natives[generator_at] = _generator_native(backend, dev, values[generator_at])
    if dtype_at is not None and not isinstance(out, tuple):
        natives[dtype_at] = out
    return natives


def _native_of(t, dev: Device, cast, compute):
    data = t._data
    if t._device is not dev:
        data = transfer(data, t._dtype, t._device, dev)
    return data if cast is None else cast(data, compute)


def _generator_native(backend, dev: Device, generator):
    if generator is None:
        return backend.default_generator(dev.index)
    native = getattr(generator, "_native", None)
    if native is None or generator.device != dev:
        raise DeviceError(f"generator on {getattr(generator, 'device', '?')} cannot draw numbers for {dev}")
    return native


def _wrap_outputs(op: OpDef, result, out, dev: Device, values, record):
    wrap = hooks.wrap
    if op.mutates:
        target = values[op.tensor_positions[0]]
        target._version[0] += 1
        outputs = target
    elif len(op.outputs) == 1:
        if op.view:
            base = values[op.tensor_positions[0]]
            outputs = hooks.wrap_view(result, out, dev, base)
        else:
            outputs = wrap(result, out, dev)
    else:
        outputs = _named(op, tuple(wrap(r, d, dev) for r, d in zip(result, out)))
    if record is not None:
        record(op, values, outputs)
    return outputs


_result_types: dict = {}


def _named(op: OpDef, results: tuple):
    """Multi-output results as a named tuple (``values, indices = ember.max(x, 1)``), like torch.return_types."""
    if op.outputs == ("*",):
        return tuple(results)
    cls = _result_types.get(op.name)
    if cls is None:
        from collections import namedtuple
        cls = _result_types[op.name] = namedtuple(op.name, op.outputs)
    return cls(*results)


def transfer(native, dt: DType, src: Device, dst: Device):
    """Copy a native array between devices, through host memory when the backends differ."""
    if src.type == dst.type:
        return registry.get_backend(src.type).to_index(native, dst.index)
    host = registry.get_backend(src.type).to_numpy(native)
    return registry.get_backend(dst.type).from_numpy(host, dt, dst.index)


__all__ = ["call", "bind", "resolve", "transfer", "wrap_dim", "hooks", "ShapeError"]
