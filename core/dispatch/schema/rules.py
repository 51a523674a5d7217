"""Promotion rules: from the promoted type of an op's inputs to its computation and output dtypes.

Each rule maps the result type ``rt`` of the promoted inputs (None when the op has none),
the op and its bound arguments (a ``BoundArgs``, read by parameter name) to ``(compute_dtype, out_dtype)``. ``compute_dtype`` is the
dtype the kernel sees its promoted inputs in (None: inputs are passed through uncast);
``out_dtype`` is a dtype, or a tuple of dtypes for ops with several outputs.
"""
from __future__ import annotations

from .dtypes import as_dtype, bool_, get_default_dtype, int64, uint8
from .promotion import result_type_of


def same(rt, op, args):
    """Output in the promoted input type: add, mul, abs, cat."""
    return rt, rt


def to_float(rt, op, args):
    """Integer and bool inputs compute in the default float dtype: div, exp, sqrt (complex stays complex)."""
    dt = rt if rt.is_inexact else get_default_dtype()
    return dt, dt


def to_real(rt, op, args):
    """The value of a complex number as its component type: abs, angle, real, imag (others as ``to_float``)."""
    dt = rt if rt.is_inexact else get_default_dtype()
    return dt, dt.to_real()


def same_real(rt, op, args):
    """Compute in the input type, answer in its component type: abs of integers stays integer."""
    return rt, rt.to_real()


def to_bool(rt, op, args):
    """Compare in the promoted type, answer in bool: eq, lt, logical_and, isnan."""
    return rt, bool_


def truth(rt, op, args):
    """any/all: bool, but uint8 answers in uint8 (PyTorch keeps it for backward compatibility)."""
    return rt, (uint8 if rt is uint8 else bool_)


def to_int64(rt, op, args):
    """Indices out: argmax, argmin, nonzero."""
    return rt, int64


def with_indices(rt, op, args):
    """Values in the input type plus int64 indices: max(dim), sort."""
    return rt, (rt, int64)


def passthrough(rt, op, args):
    """No casting; the output has the first input's dtype: views, indexing, movement."""
    return None, rt


def accumulate(rt, op, args):
    """sum/prod/cumsum: bool and integers accumulate in int64 unless ``dtype=`` says otherwise."""
    requested = requested_dtype(args)
    if requested is not None:
        return requested, requested
    dt = rt if rt.is_inexact else int64
    return dt, dt


def float_or_requested(rt, op, args):
    """mean: float inputs only, or an explicit float ``dtype=``."""
    dt = requested_dtype(args) or rt
    return dt, dt


def creation(rt, op, args):
    """Creation ops: ``dtype=``, else what the Python scalars say (arange(5) is int64), else float."""
    dt = requested_dtype(args)
    if dt is None:
        scalars = [args[p.name] for p in op.params if p.type.startswith("Scalar") and args[p.name] is not None]
        dt = result_type_of((), (), scalars) if scalars else get_default_dtype()
    return dt, dt


def integer_creation(rt, op, args):
    """randint: int64 unless ``dtype=`` says otherwise."""
    dt = requested_dtype(args) or int64
    return dt, dt


def requested_dtype(args):
    """The op's ``dtype=`` argument as an Ember dtype, or None (also for ops without one)."""
    dtype = args.get("dtype")
    return None if dtype is None else as_dtype(dtype)


#: Rules whose answer depends only on the operands' dtypes plus the values of the named parameters,
#: so the dispatcher may cache it under that key.
PURE_RULES = {same: (), to_float: (), to_real: (), same_real: (), to_bool: (), truth: (), to_int64: (),
              with_indices: (), passthrough: (),
              accumulate: ("dtype",), float_or_requested: ("dtype",)}
