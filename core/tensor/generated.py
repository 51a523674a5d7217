"""Tensor methods and Python operators generated from the op schema: one method per op (and its in-place
form), the arithmetic, comparison and bitwise operators, and PyTorch's other names for ops (``ALIASES``)."""
from __future__ import annotations

import inspect
from typing import Callable

from ..aliases import ALIASES
from ..dispatch.execution import dispatcher
from ..dispatch.execution.fastpath import make_defaults_call
from ..dispatch.execution.inplace import make_inplace
from ..dispatch.ops import F
from ..dispatch.ops.namespace import operator_function
from ..dispatch.schema import OPS, OpDef
from ..dispatch.schema.dtypes import as_dtype
from ..dispatch.schema.errors import DtypeError
from . import Tensor
from .inplace import write_result

_call = dispatcher.call
_VARARG_SIZE_METHODS = {"view", "reshape", "permute", "expand", "repeat", "sum_to_size", "broadcast_to"}
_ARITHMETIC = (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("floordiv", "floor_divide"),
               ("mod", "remainder"), ("pow", "pow"), ("matmul", "matmul"))
_COMPARISONS = (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"))
_BITWISE = (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "bitwise_left_shift"),
            ("rshift", "bitwise_right_shift"))


def _method(op: OpDef) -> Callable:
    fast = getattr(F, op.name)
    if fast.is_fast_path:
        return fast
    alone = make_defaults_call(op)
    if op.name in _VARARG_SIZE_METHODS:
        sizes_name = op.params[1].name

        def method(self, *size, **kwargs):
            if not size:  # x.permute(): PyTorch's TypeError (a 0-d tensor takes permute(()))
                if kwargs:  # by keyword, Ember's name or PyTorch's (broadcast_to(size=...))
                    return _call(op, (self,), kwargs)
                raise TypeError(f'{op.name}() missing 1 required positional arguments: "{sizes_name}"')
            if len(size) == 1 and isinstance(size[0], (list, tuple)):
                size = tuple(size[0])
            return _call(op, (self, size), kwargs)
    elif alone is not None:  # x.sum(), x.clone(): the plan found by the tensor alone
        def method(self, *args, **kwargs):
            if args or kwargs:
                return _call(op, (self,) + args, kwargs)
            return alone(self)
    else:
        def method(self, *args, **kwargs):
            return _call(op, (self,) + args, kwargs)
    method.__name__ = op.name
    method.__doc__ = f"Tensor.{op.signature}\n\n{op.doc}".strip()
    return method


def _inplace_method(op: OpDef) -> Callable:
    """``x.op_(...)``: one kernel writing into x where the backend has one, else the op and ``write_result``
    (``ember.dispatch.execution.inplace``)."""
    if "dtype" not in op.param_index:
        method = make_inplace(op, write_result)
    else:  # only ops with a dtype pay for the check (cumsum_(dtype=...))
        run = make_inplace(op, write_result)

        def method(self, *args, **kwargs):
            dtype = kwargs.get("dtype")
            if dtype is not None and as_dtype(dtype) is not self._dtype:  # PyTorch's "Bad in-place call"
                raise DtypeError(f"{op.name}_: an in-place call computes in self's dtype {self._dtype.name}, "
                                 f"got dtype={as_dtype(dtype).name}")
            return run(self, *args, **kwargs)
    method.__name__ = op.name + "_"
    method.__doc__ = f"In-place {op.name}: writes the result into self."
    return method


def _reflected(function: Callable) -> Callable:
    def operator(self, other):
        return function(other, self)
    return operator


def _arrays_only(function: Callable) -> Callable:
    """``@`` with a number (a NumPy scalar or 0-d array included) is NotImplemented, so Python raises
    TypeError, as in PyTorch: a matrix product needs two arrays."""
    def operator(self, other):
        return function(self, other) if isinstance(other, Tensor) or getattr(other, "ndim", 0) else NotImplemented
    return operator


def _inplace_operator(name: str) -> Callable:
    """``x op= y``: as ``x.op_(y)``, answering NotImplemented to an operand no tensor combines with."""
    operator = make_inplace(OPS[name], write_result, operator=True)
    operator.__signature__ = _OPERATOR_SIGNATURE  # what it takes, for help() and the stubs: (self, other)
    return operator


_OPERATOR_SIGNATURE = inspect.Signature([inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                         for name in ("self", "other")])


def op_methods(taken: set[str]) -> dict[str, Callable]:
    """Each op's method and in-place method, where the op has them and no other entry of the surface
    already takes the name (its PyTorch form differs from the op's)."""
    methods = {}
    for name, op in OPS.items():
        if op.method and name not in taken:
            methods[name] = _method(op)
        if op.inplace and name + "_" not in taken:
            methods[name + "_"] = _inplace_method(op)
    return methods


def operators() -> dict[str, Callable]:
    """Python's operators: ``x + y`` is ``add``, ``y + x`` its reflection, ``x += y`` its in-place form."""
    found: dict[str, Callable] = {}
    for dunder, name in _ARITHMETIC + _BITWISE:
        function = operator_function(name) if name != "matmul" else _arrays_only(operator_function(name))
        found[f"__{dunder}__"] = function
        found[f"__r{dunder}__"] = _reflected(function)
        if name != "matmul":
            found[f"__i{dunder}__"] = _inplace_operator(name)
    for dunder, name in _COMPARISONS:
        found[f"__{dunder}__"] = operator_function(name)
    found.update(__neg__=lambda self: F.neg(self), __pos__=lambda self: self, __abs__=lambda self: F.abs(self),
                 __invert__=lambda self: F.bitwise_not(self))
    return found


def aliases(methods: dict[str, Callable]) -> dict[str, Callable]:
    """PyTorch's other names for ops (``Tensor.arccos`` is ``Tensor.acos``), in-place forms included, for
    the names ``methods`` has and no entry takes."""
    return {alias + suffix: methods[name + suffix] for alias, name in ALIASES.items() for suffix in ("", "_")
            if name + suffix in methods and alias + suffix not in methods}
