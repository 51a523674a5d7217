"""Binding an op call's arguments to the op's parameters, and converting attribute values.

Positional and keyword arguments become one value per parameter (defaults filled); attributes
(ints, dims, sizes, dtypes, devices, ...) are converted to the canonical form kernels take, with
errors that name the op and the parameter.
"""
from __future__ import annotations

import operator

from ..execution import links
from ..contract import registry
from .dtypes import as_dtype
from .errors import DeviceError, OutOfRangeError, describe
from .opdef import REQUIRED, OpDef

NUMBER_TYPES = (bool, int, float, complex)  # Python numbers an op takes as they are


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
            renamed = _with_torch_names(op, kwargs)
            if renamed is not None:
                return bind(op, args, renamed)
            raise TypeError(f"{op.name}() missing required argument '{p.name}'; signature: {op.signature}")
    if kwargs:
        names = op.param_index
        for key in kwargs:
            index = names.get(key)
            if index is None:
                renamed = _with_torch_names(op, kwargs)
                if renamed is not None:
                    return bind(op, args, renamed)
                raise TypeError(f"{op.name}() got an unexpected keyword argument '{key}'; "
                                f"signature: {op.signature}")
            if index < len(args):
                raise TypeError(f"{op.name}() got multiple values for argument '{key}'")
    return values


#: NumPy's keyword names that PyTorch's argument parser takes for its own, on every op (``cumprod(t, axis=0)``)
NUMPY_KEYWORDS = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input", "x2": "other"}


def _with_torch_names(op: OpDef, kwargs: dict) -> dict | None:
    """``kwargs`` with NumPy's names and PyTorch's (``op.torch_keywords``) replaced by the op's own, or None
    where none applies (the caller then reports the call as it was). Only on the error path of ``bind``: calls
    by PyTorch's names cost nothing."""
    names, torch_names = op.param_index, op.torch_keywords
    renamed = {}
    for key, value in kwargs.items():
        own = torch_names.get(key, key)
        if own not in names and op.numpy_keywords:  # NumPy's name for PyTorch's, maybe this op's (x -> input -> A)
            own = NUMPY_KEYWORDS.get(key, key)
            own = torch_names.get(own, own)
        renamed[own if own in names and own not in kwargs else key] = value
    return renamed if renamed.keys() != kwargs.keys() else None


# -- attribute conversion --------------------------------------------------------------------

def _argument(function: str, name: str, position: int | None) -> str:
    at = "" if position is None else f" (position {position})"
    return f"{function}(): argument '{name}'{at}"


def int_argument(function: str, name: str, value, position: int | None = None) -> int:
    """``value`` as an int (anything with ``__index__`` but a bool), else PyTorch's TypeError naming
    ``function`` and the argument: one check for op attributes and for methods outside the schema."""
    if value.__class__ is not bool:
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{_argument(function, name, position)} must be int, not {type(value).__name__}")


def float_argument(function: str, name: str, value, position: int | None = None) -> float:
    """``value`` as a float (a Python number or anything with ``__float__``), else PyTorch's TypeError."""
    if isinstance(value, (int, float)) or hasattr(value, "__float__"):
        return float(value)
    raise TypeError(f"{_argument(function, name, position)} must be float, not {type(value).__name__}")


def bool_argument(function: str, name: str, value, position: int | None = None) -> bool:
    """``value`` itself when it is a Python bool, else PyTorch's TypeError: its parser takes neither an int nor
    a NumPy bool for a bool, so ``keepdim=7`` or ``pin_memory=1`` is a slip it reports."""
    if value.__class__ is bool:
        return value
    raise TypeError(f"{_argument(function, name, position)} must be bool, not {type(value).__name__}")


def tensor_argument(function: str, name: str, value, position: int | None = None):
    """``value`` itself when it is a Tensor, else PyTorch's TypeError naming ``function`` and the argument."""
    if isinstance(value, links.tensor.type):
        return value
    raise TypeError(f"{_argument(function, name, position)} must be Tensor, not {type(value).__name__}")


def size_argument(function: str, name: str, value) -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints, each a size an int64 holds, else a clear TypeError or
    ValueError naming ``function`` and the argument."""
    sizes = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    sizes = tuple(int_argument(function, name, s) for s in sizes)
    if any(not 0 <= s < 2 ** 63 for s in sizes):
        raise ValueError(f"{function}(): {name} must hold non-negative sizes below 2**63, got {sizes}")
    return sizes


def _as_int(op, name, v):
    return int_argument(op.name, name, v)


def _as_int_list(op, name, v):
    if isinstance(v, (list, tuple)):
        return tuple(_as_int(op, name, x) for x in v)
    return (_as_int(op, name, v),)


def wrap_dim(op_name: str, dim: int, ndim: int, operand=None, scalar_ok: bool = True) -> int:
    """A dim in [-ndim, ndim) made non-negative; 0-d tensors accept -1 and 0 like PyTorch, unless
    ``scalar_ok`` is False (``size(dim)``: a 0-d tensor has no dimension to name). The one place that
    raises PyTorch's "Dimension out of range"; ``operand``, the tensor the dim refers to, is described."""
    rank = max(ndim, 1)
    if -rank <= dim < rank and (ndim or scalar_ok):
        return dim % rank
    tensor = describe(operand) if operand is not None else "a tensor"
    if not ndim and not scalar_ok:
        raise OutOfRangeError(f"{op_name}: Dimension specified as {dim} but tensor has no dimensions ({tensor})")
    raise OutOfRangeError(f"{op_name}: dim {dim} is out of range for {tensor} with {ndim} dims. Dimension out of "
                          f"range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})")


def _all_ints(values: tuple) -> bool:
    for x in values:
        if x.__class__ is not int:
            return False
    return True


_PLAIN = {("int", int), ("int?", int), ("bool", bool), ("bool?", bool), ("float", float), ("float?", float),
          ("str", str), ("str?", str), ("Scalar", int), ("Scalar", float), ("Scalar?", int), ("Scalar?", float)}


def convert(op: OpDef, p, v, ndim: int, operand=None):
    """The value of parameter ``p`` as kernels take it (``ndim``: rank of the first tensor, for dims;
    ``operand``: that tensor, named in errors)."""
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
        return wrap_dim(op.name, _as_int(op, p.name, v), ndim, operand)
    if t == "dim[]?":
        dims = tuple(wrap_dim(op.name, d, ndim, operand) for d in _as_int_list(op, p.name, v))
        if len(set(dims)) != len(dims):
            raise ValueError(f"{op.name}: dim {tuple(v) if isinstance(v, (list, tuple)) else v} "
                             f"repeats a dimension")
        return None if not dims and op.empty_dim_reduces_all else dims
    if t in ("int[]", "int[]?"):
        return _as_int_list(op, p.name, v)
    if t in ("float", "float?"):
        return float_argument(op.name, p.name, v)
    if t in ("bool", "bool?"):
        return bool_argument(op.name, p.name, v)
    if t in ("Scalar", "Scalar?"):
        if isinstance(v, links.tensor.type):
            if v.numel() != 1:
                raise ValueError(f"{op.name}(): argument '{p.name}' must be a number or a one-element "
                                 f"tensor, got {describe(v)}")
            return v.item()
        if not isinstance(v, NUMBER_TYPES) and not hasattr(v, "__index__") and not hasattr(v, "__float__"):
            raise TypeError(f"{op.name}(): argument '{p.name}' must be a number, not {type(v).__name__}")
        return v if isinstance(v, NUMBER_TYPES) else (int(v) if hasattr(v, "__index__") else float(v))
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
    if t == "Generator?" and not hasattr(v, "_native"):  # an ember.Generator, whichever device it draws for
        raise TypeError(f"{op.name}(): argument '{p.name}' must be Generator, not {type(v).__name__}")
    return v  # Generator? and Any are converted where they are used


__all__ = ["bind", "convert", "wrap_dim", "int_argument", "float_argument", "bool_argument", "tensor_argument"]
