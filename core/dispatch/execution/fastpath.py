"""The entry points of the hottest calls: elementwise ops on one or two operands of one dtype and device.

They look up the same call plans as the generic ``dispatcher.call``, in the same table, under a
cheaper key: (op, device, dtype, grad wanted), plus the Python number's type where one operand is
a number. The plan is built once per key by the dispatcher's own validation, run on stand-in
tensors, and executed by the executor like any other; per call only the operands' shapes are
checked (broadcasting). Anything else (keywords, mixed dtypes or devices, an active dispatch mode)
goes to ``dispatcher.call``, which also raises the proper errors.

``make_defaults_call`` serves ``op(x)`` with every attribute at its default (``x.sum()``, ``x.clone()``), for
any op whose one tensor comes first: its key is the generic key itself, whose attribute part, fixed by the
defaults, is worked out once.
"""
from __future__ import annotations

from . import links, modes
from .dispatcher import _converted, _validate_and_plan, call, passes_as_number, plan_key, simple_elementwise
from ..schema.errors import EmberError
from .kernel_errors import KERNEL_ERRORS, kernel_error
from ..schema.meta import broadcast_shapes
from .plan import store, table
from ..schema import OpDef
from ..schema.dtypes import _default_float

_GENERIC = "generic"  # stored under a fast key whose calls must take the generic path
_active_modes = modes.active


class _ProbeArray:
    """Stands in for a one-dimensional native array while a plan is worked out."""
    shape = (1,)


def _fast_plan(op: OpDef, key: tuple, device, dtype, grad: bool, scalar=None, scalar_first: bool = False):
    """The plan for a fast key, made by the dispatcher's validation on stand-in operands, or _GENERIC."""
    probe = links.tensor.wrap(_ProbeArray(), dtype, device)
    probe.requires_grad = grad
    values = [probe] * len(op.tensor_positions)
    if scalar is not None:
        values[0 if scalar_first else -1] = scalar
    values += [p.default for p in op.params[len(values):]]
    try:
        plan = _validate_and_plan(op, values, grad, None)
    except EmberError:
        plan = _GENERIC  # the generic path raises the error, naming the real operands
    store(key, plan)
    return plan


def make_unary(op: OpDef, slow=call):
    lookup = table.get

    def function(*args, **kwargs):
        if len(args) == 1 and not kwargs and not _active_modes:
            try:  # free unless raised (Python 3.11); the same hook as dispatcher.call's
                a = args[0]
                if a.__class__ is links.tensor.type:
                    grad = a.requires_grad and links.recorder.state.enabled
                    key = (op, a._device, a._dtype, grad)
                    plan = lookup(key)
                    if plan is None:
                        plan = _fast_plan(op, key, a._device, a._dtype, grad)
                    if plan is not _GENERIC:
                        return plan.run([a, *plan.attrs])
            except KERNEL_ERRORS as error:
                raise kernel_error(plan, [*args, *plan.attrs], error) from None
        return slow(op, args, kwargs)
    return function


def make_binary(op: OpDef, slow=call):
    name = op.name
    lookup = table.get

    def function(*args, **kwargs):
        if len(args) == 2 and not kwargs and not _active_modes:
            try:  # free unless raised (Python 3.11); the same hook as dispatcher.call's
                a, b = args
                tensor_type = links.tensor.type
                if a.__class__ is tensor_type:
                    if b.__class__ is tensor_type:
                        if b._device is a._device and b._dtype is a._dtype:
                            grad = (a.requires_grad or b.requires_grad) and links.recorder.state.enabled
                            key = (op, a._device, a._dtype, grad)
                            plan = lookup(key)
                            if plan is None:
                                plan = _fast_plan(op, key, a._device, a._dtype, grad)
                            if plan is not _GENERIC:
                                if a._data.shape != b._data.shape:
                                    broadcast_shapes(name, a._data.shape, b._data.shape)
                                return plan.run([a, b, *plan.attrs])
                    elif passes_as_number(b):
                        grad = a.requires_grad and links.recorder.state.enabled
                        key = (op, a._device, a._dtype, grad, b.__class__)
                        plan = lookup(key)
                        if plan is None:
                            plan = _fast_plan(op, key, a._device, a._dtype, grad, b)
                        if plan is not _GENERIC:
                            return plan.run([a, b, *plan.attrs])
                elif b.__class__ is tensor_type and passes_as_number(a):
                    grad = b.requires_grad and links.recorder.state.enabled
                    key = (op, b._device, b._dtype, grad, a.__class__, 0)
                    plan = lookup(key)
                    if plan is None:
                        plan = _fast_plan(op, key, b._device, b._dtype, grad, a, scalar_first=True)
                    if plan is not _GENERIC:
                        return plan.run([a, b, *plan.attrs])
            except KERNEL_ERRORS as error:
                raise kernel_error(plan, [*args, *plan.attrs], error) from None
        return slow(op, args, kwargs)
    return function


def make_defaults_call(op: OpDef, slow=call):
    """The entry point of ``op(x)`` with no other argument, for ops whose one tensor parameter comes first and
    whose attributes all have defaults; None for other ops. It looks up the plan ``dispatcher.call`` would, by
    the same key, but builds only the tensor's part of it per call: the attributes' part (``plan_key``'s, for
    the defaults) is taken from the first call. Anything else goes to ``slow``."""
    if op.sole_tensor != 0 or op.min_args > 1 or op.layout_dependent:
        return None
    defaults = op.default_values[1:]
    lookup = table.get
    attributes = []  # [the key's attribute part] once known; [None] where the defaults cannot be keyed

    def function(x):
        if x.__class__ is links.tensor.type and not _active_modes:
            if not attributes:
                key = plan_key(op, [x, *defaults])
                attributes.append(key[7:] if key is not None else None)  # after the tensor's 7 items
            if attributes[0] is not None:
                requires_grad = x.requires_grad
                plan = lookup((op, requires_grad and links.recorder.state.enabled, _default_float[0], x._data.shape,
                               x._dtype, x._device, requires_grad) + attributes[0])
                if plan is not None and not plan.validates_every_call:
                    values = [x, *defaults]
                    if plan.converts:
                        _converted(op, plan, values)
                    try:  # free unless raised (Python 3.11); the same hook as dispatcher.call's
                        return plan.run(values)
                    except KERNEL_ERRORS as error:
                        raise kernel_error(plan, values, error) from None
        return slow(op, (x,), {})
    return function


def call_or_not_implemented(op: OpDef, args: tuple, kwargs: dict):
    """``dispatcher.call``, answering NotImplemented to a TypeError (an operand no tensor combines with): the
    slow path of Python's operators, so that Python tries the other operand's method and ``x == None`` falls
    back to identity, as PyTorch's operators do. Ember's own errors (a DtypeError is also a TypeError: bool
    subtraction) are the op's verdict on operands it takes, and propagate."""
    try:
        return call(op, args, kwargs)
    except EmberError:
        raise
    except TypeError:
        return NotImplemented


def make_function(op: OpDef, operator: bool = False):
    """The fast entry point for ``op``, or None where the generic ``dispatcher.call`` is the entry point.
    ``operator``: the form Python's operators call (``call_or_not_implemented`` past the fast path)."""
    if simple_elementwise(op):
        slow = call_or_not_implemented if operator else call
        return make_unary(op, slow) if len(op.tensor_positions) == 1 else make_binary(op, slow)
    return None
