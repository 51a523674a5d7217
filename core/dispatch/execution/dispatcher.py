"""The per-call path: the entry point of every op, and the validation that makes call plans.

``call`` hands the call to the active dispatch modes, if any (``modes``), binds the arguments and
looks up the call's plan (``plan``) by a key of everything validation looks at; on a hit it runs the
plan's function (``executor``) at once. On a miss it validates the call here, once: devices,
dtypes (promotion and what the backend supports), attributes and shapes (the op's ``meta``), then
builds, caches and runs the plan. Kernels stay free of Python-side validation.

An op whose validation reads tensor *values* (index range checks: embedding, cross_entropy, one_hot,
gather, ...) is validated on every call; it is seen doing so through ``note_value_read``, which every read
of values to the host calls (``item``, ``tolist``, ``bool(t)``, ``numpy()``), and which checks that answer
from a memo call themselves.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from . import links, modes
from ..contract import registry
from .kernel_errors import KERNEL_ERRORS, kernel_error
from .memory import check_addressable
from .out_argument import call_with_out
from ..schema.binding import NUMBER_TYPES as _NUMBER, bind, convert, wrap_dim
from ..schema.defaults import get_default_device
from ..schema.device import device as Device
from ..schema.dtypes import SCALAR_TYPE_NAMES, _default_float, bool_, dtype as DType
from ..schema.errors import (ArgumentError, BackendError, DeviceError, DtypeError, EmberError, NumberOverflowError,
                             ShapeError, UnsupportedDtypeError, describe)
from .arguments import DATA, PASS, Native, Natives, Number
from .executor import runner
from .into import into_runner
from . import user_kernels
from .fallback import refuse_or_warn
from .plan import CallPlan, cached, count_miss, families, prefers_composite, store, store_family, table
from ..schema.promotion import result_type_of, scalar_dtype
from ..schema import REQUIRED, OpDef
from .storage_dtypes import through_float32
from .transfer import transfer

_active_modes = modes.active  # the same list object: checked on every call


def call(op: OpDef, args: tuple, kwargs: dict, modes_seeing_it: list | tuple = _active_modes):
    """Run ``op`` on the given arguments: the one generic entry point of every op.

    The active dispatch modes see the call first; below the last of them (``run``) it finds or makes
    the call's plan and runs it."""
    if kwargs and "out" in kwargs and op.accepts_out:
        return call_with_out(call, op, args, kwargs)
    if modes_seeing_it:
        return modes.dispatch(op, args, kwargs, run)
    plan, values = planned(op, args, kwargs)
    try:  # free unless raised (Python 3.11): the fast path's entry points do the same
        return plan.run(values)
    except KERNEL_ERRORS as error:
        raise kernel_error(plan, values, error) from None


def planned(op: OpDef, args: tuple, kwargs: dict) -> tuple:
    """``(plan, values)`` of a call: its values bound in parameter order (and converted as the plan has them),
    and its cached plan, or a new one after validation. What ``call`` runs, and in-place calls too."""
    if not kwargs and op.min_args <= len(args) <= op.positional_count:
        values = [*args, *op.default_values[len(args):]]
    elif not kwargs and len(args) == len(op.params):  # every value, bound already (the CPU fallback's call)
        values = list(args)
    else:
        values = bind(op, args, kwargs)
    key = plan_key(op, values)
    plan = _cached_plan(op, key, values)
    if plan is None:
        plan = _validate_and_plan(op, values, grad_wanted(op, values), key)
    return plan, values


def run(op: OpDef, args: tuple, kwargs: dict):
    """``call`` as the modes' last step: the op itself, with no mode seeing it."""
    return call(op, args, kwargs, ())


# -- plan keys -------------------------------------------------------------------------------

_activity = 0  # host reads of tensor values: any change during a validation means it read data
_reads_values: set = set()  # ops whose validation was seen reading tensor values: validated on every call
_KEY_ATOMS = frozenset({int, float, bool, str, type(None)})
_KEY_AS_IS = frozenset({int, str, type(None), DType, Device})  # attribute values that are keys as they are
_A_GENERATOR = object()  # a generator= argument's place in a key
_NUMBER_KINDS = frozenset({int, float, bool})


#: Called on every host read of tensor values and every device transfer, with what happened (a short
#: phrase): work outside the op calls, which ``ember.compile``'s capture cannot replay.
value_read_hooks: list = []


def note_value_read() -> None:
    """Called where a tensor's values are read to the host (``item``, ``tolist``): a validation doing this
    is data-dependent, so its op is validated on every call (its plans are still cached)."""
    global _activity
    _activity += 1
    if value_read_hooks and not _validating:
        for hook in value_read_hooks:
            hook("a read of tensor values to the host (item, tolist, bool, print, numpy)")


def resolve(op: OpDef, args: tuple, kwargs: dict) -> tuple[CallPlan, list]:
    """The plan a call of ``op`` would run with nothing recording, and its bound, converted values: what a
    tracer needs to replay the call later without validating it again. Validation errors raise as usual."""
    values = bind(op, args, kwargs)
    with links.recorder.no_grad():
        key = plan_key(op, values)
        plan = _cached_plan(op, key, values)
        if plan is None:
            plan = _validate_and_plan(op, values, False, key)
    return plan, values


def infer(op: OpDef, args: tuple, kwargs: dict) -> tuple[CallPlan, list, Any]:
    """A call validated as its first call would be, without running it and without caching its plan: the plan,
    the bound values (converted and normalized) and the op's meta result (the outputs' shapes). ``ember.library``'s
    fake tensors take the shapes and dtypes of their ops' results from here."""
    global _validating
    values = bind(op, args, kwargs)
    with links.recorder.no_grad():
        plan = _validate_and_plan(op, values, False, None)
    _validating += 1
    try:
        shapes = op.meta(*values)
    finally:
        _validating -= 1
    return plan, values, shapes


@contextmanager
def reads_apart(refuse: Callable[[str], None] | None = None) -> Iterator[None]:
    """Run the block, inside a validation, as a program of its own: its reads of tensor values are not the
    validated op's (they do not make the op validate every call) and no tracer hears of them or of its device
    transfers. With ``refuse``, every read and transfer calls it first, and it raises: ``ember.library`` runs a
    custom op's fake function so, since a fake function may look at shapes, never at values."""
    global _validating, _activity
    saved = _validating, _activity, value_read_hooks[:]
    if refuse is not None:
        _validating = 0  # the block's reads are the program's: hooks hear of them (validations inside it aside)
    value_read_hooks[:] = [] if refuse is None else [refuse]
    try:
        yield
    finally:
        _validating, _activity = saved[0], saved[1]
        value_read_hooks[:] = saved[2]


def _cached_plan(op: OpDef, key, values: list) -> CallPlan | None:
    """The cached plan that serves this call, with ``values`` made as it has them (the keyed attributes'
    converted forms in place; where the plan's checks run on every call, those checks passed); None where the
    call must be validated whole. A call whose ``varying`` attributes have values not seen before takes the
    plan of its family (calls differing only in them), checked on its own values."""
    if key is None:
        return None
    plan = table.get(key)
    if plan is not None:
        if plan.validates_every_call:
            return plan if _values_checked(op, plan, values) else None
        if plan.converts:  # attributes whose converted form differs from what was passed (dim=-1 -> 0)
            _converted(op, plan, values)
        return plan
    if op.varying:
        plan = families.get(plan_key(op, values, op.family_attr_positions))
        if plan is not None:
            passed = values.copy()
            if _values_checked(op, plan, values):
                # these values' own plan, so that the next such call checks nothing: the family's, with their
                # converted forms
                own = plan.sharing(tuple((i, values[i]) for i in op.keyed_attr_positions
                                         if values[i] is not passed[i]))
                store(key, own)
                return own
    return None


def _converted(op: OpDef, plan: CallPlan, values: list) -> None:
    """Put the plan's converted attribute values in place of those passed (unkeyed ones stay as passed)."""
    for i, v in plan.converts:
        values[i] = v


def _values_checked(op: OpDef, plan: CallPlan, values: list) -> bool:
    """For a cached plan of an op whose checks read tensor values (index bounds), or of a call's family (its
    ``varying`` attributes converted here): run the checks that depend on more than the key (the op's
    ``normalize`` and ``meta``) on this call's values, in place; the rest of
    validation (devices, dtypes, promotion) depends on the key alone. False, with ``values`` as passed, where
    ``normalize`` gave an operand of another shape, dtype or device than the one passed (an int32 index made
    int64): the plan may not fit it, so the call is validated whole."""
    global _validating
    if op.unkeyed:
        return False  # attributes no plan knows, which only a whole validation converts
    passed = values.copy()
    for i, v in plan.converted_attrs:  # as validation converts them, before the checks
        values[i] = v
    if op.varying:  # this call's own, converted as validation would
        first = values[op.tensor_positions[0]] if op.tensor_positions else None
        ndim = len(first._data.shape) if first.__class__ is links.tensor.type else 0
        params = op.params
        for i in op.varying_positions:
            values[i] = convert(op, params[i], values[i], ndim, first)
    _validating += 1
    try:
        op.normalize_values(values)
        result_shapes = op.meta(*values)
    finally:
        _validating -= 1
    if not all(values[i] is passed[i] or _alike(values[i], passed[i]) for i in op.tensor_positions):
        values[:] = passed
        return False
    check_addressable(op, result_shapes, plan.out, plan.device, _tensors_of(op, values), allocates=not op.view)
    return True


def _alike(new, old) -> bool:
    """Whether ``normalize`` replaced an operand by one of the same kind (a tensor of the same shape, dtype and
    device; a list of such tensors, or of the same Nones), which a plan made for either serves alike."""
    Tensor = links.tensor.type
    if isinstance(new, Tensor) and isinstance(old, Tensor):
        return new._data.shape == old._data.shape and new._dtype is old._dtype and new._device is old._device
    if isinstance(new, (list, tuple)) and isinstance(old, (list, tuple)) and len(new) == len(old):
        return all(a is b or _alike(a, b) for a, b in zip(new, old))
    return False


def validates_every_call(op: OpDef) -> bool:
    """Whether ``op``'s validation reads tensor values, so that it runs on every call."""
    return op in _reads_values


def plan_key(op: OpDef, values: list, attr_positions: tuple | None = None):
    """The plan cache key of this call, or None where an argument cannot be part of a key. The grad mode is
    part of it only where an operand requires grad: otherwise nothing records either way.

    Attribute values are keys as they are, but for those that compare equal to values of another type that
    validation treats differently: True, 1 and 1.0, or (2, 5) and (2.0, 5.0). Floats and bools go in with
    their type, sequences of anything but ints with their element types."""
    at = op.sole_tensor
    first = values[at] if at is not None else None
    if first.__class__ is links.tensor.type:  # the common case, built quickly
        requires_grad = first.requires_grad
        key = [op, requires_grad and links.recorder.state.enabled, _default_float[0], first._data.shape,
               first._dtype, first._device, requires_grad]
    else:
        key, first = _operands_key(op, values, links.tensor.type)
        if key is None:
            return None
    append = key.append
    for i in op.keyed_attr_positions if attr_positions is None else attr_positions:
        v = values[i]
        c = v.__class__
        if c in _KEY_AS_IS:
            append(v)
        elif c is tuple or c is list:
            for element in v:
                if element.__class__ is not int:
                    v = _typed_sequence(v)
                    if v is None:
                        return None
                    break
            append(v if v.__class__ is tuple else tuple(v))
        elif c is float or c is bool:
            append((c, v))
        elif op.params[i].type == "Generator?":  # each call hands its generator to the kernel: no plan depends on it
            append(_A_GENERATOR)
        else:
            return None
    if first is None:
        append(get_default_device())  # no tensor operand: the device may come from the default
    elif op.layout_dependent:  # the native's strides (in bytes or elements: the dtype is in the key already)
        strides = getattr(first._data, "strides", None)
        append(strides if strides is not None else registry.get_backend(first._device.type).strides(first._data))
    return tuple(key)


def _typed_sequence(v) -> tuple | None:
    """A sequence of numbers with their types, as a key; None for a sequence of anything else."""
    kinds = tuple(map(type, v))
    return (kinds, tuple(v)) if _NUMBER_KINDS.issuperset(kinds) else None


def _tensors_of(op: OpDef, values: list) -> list:
    """The tensor operands, lists expanded."""
    return list(modes.tensors_in(tuple(values[i] for i in op.tensor_positions), None))


def grad_wanted(op: OpDef, values: list) -> bool:
    """Whether this call records for autograd, as far as the grad mode and the operands say."""
    if not links.recorder.state.enabled:
        return False
    return any(t.requires_grad for t in _tensors_of(op, values))


def _operands_key(op: OpDef, values: list, Tensor):
    """The start of a key: the op and its tensor operands; and the first tensor. (None, None) where an
    operand cannot be part of a key."""
    key = [op, False, _default_float[0]]  # [1]: grad wanted, filled in below
    first = None
    wants_grad = False
    for i in op.tensor_positions:
        v = values[i]
        kind = v.__class__
        if kind is Tensor:  # the common operand, first
            key += (v._data.shape, v._dtype, v._device, v.requires_grad)
            if v.requires_grad:
                wants_grad = True
            if first is None:
                first = v
            continue
        if kind in _KEY_ATOMS:  # a Python number (or None): promotion looks at its kind, a check at its value
            key += (kind, v)
            continue
        if kind is list or kind is tuple:
            key.append(len(v))
            items = v
        else:
            items = (v,)
        for t in items:
            if t.__class__ is Tensor or isinstance(t, Tensor):  # nn.Parameter too
                key += (t._data.shape, t._dtype, t._device, t.requires_grad)
                if t.requires_grad:
                    wants_grad = True
                if first is None:
                    first = t
            elif t is None and items is v:
                key.append(None)  # an empty slot of an index list
            else:
                return None, None
    if wants_grad:
        key[1] = links.recorder.state.enabled
    return key, first


# -- validation ------------------------------------------------------------------------------

_validating = 0  # > 0 while a call is validated: its reads of values are checks, not the program's


class checking_results:
    """Reads of values inside an op's definition that are checks of its results (a factorization's info, read to
    raise LinAlgError): like a validation's reads, not the program's, so tracers see no break. The op also reads
    values in its ``normalize`` hook (``note_value_read``), so that ``ember.compile`` replays it whole, checks
    included."""

    def __enter__(self) -> None:
        global _validating
        _validating += 1

    def __exit__(self, *exc) -> None:
        global _validating
        _validating -= 1


def _validate_and_plan(op: OpDef, values: list, grad: bool, key) -> CallPlan:
    """Check the call, convert its attributes in ``values``, and return its plan (cached under ``key``).
    ``grad``: grad mode is on and an operand requires grad."""
    global _validating
    _validating += 1
    try:
        return _checked_plan(op, values, grad, key)
    finally:
        _validating -= 1


def _checked_plan(op: OpDef, values: list, grad: bool, key) -> CallPlan:
    before = _activity
    family = plan_key(op, values, op.family_attr_positions) if op.varying and key is not None else None
    originals = [values[i] for i in op.tensor_positions]
    passed = [values[i] for i in op.attr_positions]
    tensors, scalars, dev = _collect(op, values)
    params = op.params
    ndim = len(tensors[0]._data.shape) if tensors else 0
    first = tensors[0] if tensors else None
    for i in op.attr_positions:
        values[i] = convert(op, params[i], values[i], ndim, first)
    converted = tuple((i, values[i]) for i, v in zip(op.attr_positions, passed)
                      if values[i] is not v and i not in op.varying_positions)
    if dev is None:
        dev_index = op.param_index.get("device")
        dev = values[dev_index] if dev_index is not None and values[dev_index] is not None else None
        if dev is None:
            dev = get_default_device()
    backend = registry.get_backend(dev.type)
    compute, out = _promote(op, values, tensors, scalars)
    _check_dtypes(op, compute, out, tensors, backend, dev)
    op.normalize_values(values)
    result_shapes = op.meta(*values)  # validates shapes; raises ShapeError naming the op and operands
    check_addressable(op, result_shapes, out, dev, tensors, allocates=not op.view)
    if _activity != before and key is not None and op not in _reads_values:
        # the checks read tensor values: validate this op on every call. A call without a key (a 0-d tensor
        # given for a number, read as one) caches no plan, so its reads say nothing of the op's cached plans
        _reads_values.add(op)
        for plan in cached(op):
            plan.validates_every_call = True
    # a plan serves every call of its key where the key's operands reach the kernel as they are; where the checks
    # replace them (wrapped indices) by ones of the same kind, only if those checks run on every call
    every_call = op in _reads_values
    cacheable = key is not None and all(values[i] is t or (every_call and _alike(values[i], t))
                                        for i, t in zip(op.tensor_positions, originals))
    plan = table.get(key) if cacheable else None
    if plan is None:
        count_miss()
        plan = make_plan(op, values, dev, backend, compute, out, grad, grad and op.differentiable)
        plan.converts = tuple((i, values[i]) for i, v in zip(op.attr_positions, passed)
                              if i in op.keyed_attr_positions and values[i] is not v)
        plan.converted_attrs = converted
        plan.validates_every_call = every_call
        if cacheable:
            store(key, plan)
            if family is not None:
                store_family(family, plan)
    return plan


def make_plan(op: OpDef, values: list, dev: Device, backend, compute, out, grad_on: bool,
              records: bool) -> CallPlan:
    """The plan for validated ``values``: which implementation runs and how each operand reaches it."""
    if op.kernels is None:
        kernel = backend.kernels.get(op.name)
    else:  # a custom op (ember.library): its user's function for the device, run on tensors
        kernel = user_kernels.kernel(op, backend, values, dev, out)
    if op.complex_decomposition is not None and compute is not None and compute.is_complex:
        kind, impl = "composite", op.complex_decomposition  # real ops, each recording its own node
    elif records and op.kind == "composite" and op.derivative is None:
        kind, impl = "composite", op.composite  # decompose, so that every inner op records its node
    elif kernel is not None and not (op.composite is not None and prefers_composite(op, dev.type)):
        kind, impl = "kernel", kernel
    elif op.composite is not None:
        kind, impl = "composite", op.composite
    else:
        refuse_or_warn(op, dev)  # raises unless the opt-in CPU fallback is on
        kind, impl = "fallback", None
    if records and op.derivative is None and kind != "composite":
        raise EmberError(f"{op.name}: no derivative is declared for this op, so it cannot be differentiated; "
                         f"inputs: {', '.join(describe(t) for t in _tensors_of(op, values))}")
    arguments = _arguments(op, values, compute, backend, dev) if kind == "kernel" else ()
    if kind == "kernel" and not hasattr(impl, "on_tensors"):
        impl = through_float32(op, impl, values, compute, out, backend.storage_only_dtypes(dev.index),
                               backend.kernels["to_dtype"]) or impl
    plan = CallPlan(op, kind, impl, dev, backend, compute, out, tuple(values[i] for i in op.attr_positions),
                    grad_on, records, arguments)
    plan.run = runner(plan, call)
    if op.inplace and op.name in backend.out_kernels:  # x.op_(...) may run as one kernel writing into x
        if kind == "composite" and not records and not prefers_composite(op, dev.type):
            arguments = _arguments(op, values, compute, backend, dev)
        plan.into = into_runner(plan, arguments)
    return plan


def _arguments(op: OpDef, values: list, compute, backend, dev: Device) -> tuple:
    """Per tensor position, how its value becomes a kernel argument (the recipe of ``arguments.py``)."""
    Tensor = links.tensor.type
    cast = backend.kernels["to_dtype"]
    scalars_pass = (simple_elementwise(op) and backend.accepts_python_scalars
                    and all(values[i] == op.params[i].default for i in op.attr_positions))  # as the fast path calls
    arguments = []
    for i in op.tensor_positions:
        v = values[i]
        promote = compute is not None and op.params[i].type in ("Tensor", "Tensor?", "Tensor[]")
        if isinstance(v, Tensor):
            if v._device is dev and (not promote or v._dtype is compute):
                arguments.append((i, DATA))
            else:
                arguments.append((i, Native(dev, cast if promote and v._dtype is not compute else None, compute)))
        elif isinstance(v, (list, tuple)):
            arguments.append((i, Natives(Native(dev, cast if promote else None, compute))))
        elif isinstance(v, _NUMBER):
            dt = compute or scalar_dtype(v)
            if scalars_pass and passes_as_number(v, dt):
                arguments.append((i, PASS))
            else:
                arguments.append((i, Number(backend, dt, dev.index)))
        else:
            arguments.append((i, PASS))  # None in an optional position
    return tuple(arguments)


def simple_elementwise(op: OpDef) -> bool:
    """Elementwise ops whose one or two operands come first and whose attributes all have defaults:
    backends' kernels for them take a Python number for an operand, and the fast path serves them."""
    if op.category != "elementwise":
        return False
    tensors = [p for p in op.params if p.is_tensor]
    return (len(tensors) in (1, 2) and all(p.type == "Tensor" for p in tensors)
            and all(p.is_tensor for p in op.params[:len(tensors)])
            and all(p.default is not REQUIRED for p in op.params[len(tensors):]))


def passes_as_number(v, dt: DType | None = None) -> bool:
    """Whether a backend's elementwise kernel may take the Python number ``v`` itself (where the backend
    ``accepts_python_scalars``): floats for floating compute, small non-negative ints for any but bool
    (NumPy refuses ints out of the array dtype's range). Without ``dt``, whether ``v`` can pass for some
    dtype: the fast path keys its plans on such numbers."""
    if v.__class__ is float:
        return dt is None or dt.is_floating_point
    return v.__class__ is int and 0 <= v < 128 and dt is not bool_


def _device_mismatch(op: OpDef, tensors) -> DeviceError:
    devices = sorted({str(t._device) for t in tensors})
    return DeviceError(f"{op.name}: expected all tensors on one device, got {' and '.join(devices)} "
                       f"({', '.join(describe(t) for t in tensors)})")


def _refuse_numbers(op: OpDef, values: list, tensors: list) -> None:
    """PyTorch's rule: a number may stand for an elementwise operand, never for all of them; for another op's
    tensor only where it has a Scalar overload (``OpDef.number_operands``)."""
    if tensors and op.category == "elementwise":
        return
    for i in op.tensor_positions:
        if isinstance(values[i], _NUMBER) and not (tensors and op.params[i].name in op.number_operands):
            raise TypeError(f"{op.name}(): argument '{op.params[i].name}' (position {i + 1}) must be Tensor, not "
                            f"{type(values[i]).__name__}")


def _collect(op: OpDef, values: list):
    """Tensor operands, Python-number operands and the device. Moves zero-dim CPU tensors across."""
    Tensor = links.tensor.type
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
            if not v and not (op.mutates.__class__ is tuple and i != op.tensor_positions[0]):
                raise ArgumentError(f"{op.name}(): expected a non-empty sequence of tensors")
            tensors.extend(v)
        elif v is None and p.optional:
            continue
        elif p.type == "Index?[]":
            if not isinstance(v, (list, tuple)) or not all(x is None or isinstance(x, Tensor) for x in v):
                raise TypeError(f"{op.name}(): argument '{p.name}' must be a sequence of tensors or None")
            tensors.extend(x for x in v if x is not None)
        elif p.type in ("Tensor", "Tensor?") and isinstance(v, _NUMBER):
            scalars.append(v)
        elif p.type in ("Tensor", "Tensor?") and isinstance(v, np.generic) and v.dtype.kind in "biufc":
            # a NumPy scalar stands for its Python number, as in PyTorch, which reads a NumPy bool as a float
            values[i] = float(v) if v.dtype.kind == "b" else v.item()
            scalars.append(values[i])
        else:
            raise TypeError(f"{op.name}(): argument '{p.name}' must be a Tensor, not {type(v).__name__}")
    first = op.tensor_positions[0] if op.tensor_positions else None
    if scalars and not tensors and op.numbers_alone:  # torch.mul(2, 3): the first number as a 0-d tensor
        number = values[first]
        values[first] = _number_tensor(op, number)
        tensors.append(values[first])
        scalars.remove(number)
    if scalars:
        _refuse_numbers(op, values, tensors)
    for t in tensors:
        if dev is None:
            dev = t._device
        elif t._device is not dev:
            dev = _reconcile_devices(op, tensors)
            break
    return tensors, scalars, dev


def _number_tensor(op: OpDef, value):
    """A Python number as a 0-d tensor of its own dtype (int64, bool or the default float) on the default
    device."""
    dt, dev = scalar_dtype(value), get_default_device()
    try:
        host = np.asarray(value, dtype=np.dtype(dt.name))
    except OverflowError:
        raise NumberOverflowError(f"{op.name}: Overflow when unpacking long: {value} does not fit {dt.name}") from None
    native = registry.get_backend(dev.type).from_numpy(host, dt, dev.index)
    return links.tensor.wrap(native, dt, dev)


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
                if isinstance(v, links.tensor.type)]
    if promoted or scalars:
        dims = [t._dtype for t in promoted if t._data.shape != ()]
        zeros = [t._dtype for t in promoted if t._data.shape == ()]
        rt = result_type_of(dims, zeros, scalars)
    elif tensors:
        rt = tensors[0]._dtype
    else:
        rt = None
    return op.promote(rt, values)


def _check_dtypes(op: OpDef, compute: DType | None, out, tensors, backend, dev: Device):
    if compute is not None and compute not in op.accepted_dtypes:
        inputs = ', '.join(describe(t) for t in tensors) or 'none'
        if compute.is_complex:  # PyTorch's wording: "lt_cpu" not implemented for 'ComplexFloat'
            raise UnsupportedDtypeError(f"{op.name}: not implemented for '{SCALAR_TYPE_NAMES[compute]}' "
                                        f"({compute.name}); inputs: {inputs}")
        raise UnsupportedDtypeError(f"{op.name}: not supported for dtype {compute.name} (accepts {op.dtypes} "
                                    f"dtypes); inputs: {inputs}")
    supported = backend.supported_dtypes(dev.index)
    for d in (compute, *(out if isinstance(out, tuple) else (out,))):
        if d is not None and d not in supported:
            raise DtypeError(f"{op.name}: {dev} does not support {d.name}; it supports "
                             f"{', '.join(x.name for x in sorted(supported, key=lambda x: x._rank))}")


__all__ = ["call", "planned", "run", "resolve", "infer", "reads_apart", "value_read_hooks", "simple_elementwise",
           "passes_as_number", "validates_every_call", "bind", "plan_key", "make_plan", "transfer",
           "wrap_dim", "note_value_read", "ShapeError", "BackendError"]
