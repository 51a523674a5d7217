"""The public functions (``ember.add``, ``ember.zeros``, ...): one per op, plus PyTorch's overloads."""
from __future__ import annotations

import functools
import inspect
from numbers import Number as _Number

from .aliases import ALIASES, TORCH_INPLACE_FUNCTIONS, inplace_function
from .dispatch.ops import F
from .dispatch.ops.shapes import grids as _grids
from .dispatch.ops.reductions import histograms as _histograms
from .dispatch.ops.indexing import sets as _sets
from .dispatch.execution.out_argument import accepting_out
from .dispatch.schema import OPS
from .dispatch.schema.binding import bool_argument, float_argument, int_argument
from .dispatch.schema.promotion import promote_types
from .dispatch.schema.errors import ArgumentError
from .memory_format import (channels_last, channels_last_3d, check_layout, contiguous_format, preserve_format,
                            strided, to_format)
from .tensor import Tensor


def _sizes(args) -> tuple:
    """``zeros(2, 3)`` and ``zeros((2, 3))`` both mean size (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return tuple(args)


def _with_varargs_size(name: str):
    op_function = getattr(F, name)

    def function(*size, **kwargs):
        if "size" in kwargs:
            return op_function(kwargs.pop("size"), **kwargs)
        return op_function(_sizes(size), **kwargs)
    function.__name__ = name
    function.__doc__ = op_function.__doc__
    return function


zeros = _with_varargs_size("zeros")
ones = _with_varargs_size("ones")
empty = _with_varargs_size("empty")
rand = _with_varargs_size("rand")
randn = _with_varargs_size("randn")


def full(size, fill_value, **kwargs):
    return F.full(_sizes((size,)) if not isinstance(size, int) else (size,), fill_value, **kwargs)


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()  # an argument not given, where an explicit None is an error (as in PyTorch)


def arange(start=_UNSET, end=_UNSET, step=1, **kwargs):
    """``arange(end)``, ``arange(start, end, step=1)``, and by keyword ``arange(end=5)``, as in PyTorch."""
    if start is _UNSET and end is _UNSET:
        raise TypeError("arange() missing required argument 'end'")
    if end is _UNSET:
        start, end = 0, start
    elif start is _UNSET:
        start = 0
    if start is None or end is None:
        raise TypeError(f"arange(): arguments 'start' and 'end' must be numbers, got {start!r} and {end!r}")
    return F.arange(start, end, step, **kwargs)


def randint(low=_UNSET, high=_UNSET, size=_UNSET, **kwargs):
    """``randint(high, size)`` or ``randint(low, high, size)``, and by keyword ``randint(high=5, size=(2,))``,
    as in PyTorch."""
    if low is _UNSET:
        low = 0
    elif size is _UNSET:
        low, high, size = 0, low, high
    if any(v is None or v is _UNSET for v in (low, high, size)):
        raise TypeError(f"randint() takes (high, size) or (low, high, size), got low={low!r}, high={high!r}, "
                        f"size={size!r}")
    return F.randint(low, high, size, **kwargs)


def normal(mean, std=1.0, size=None, *, generator=None, layout=None, pin_memory=False, **kwargs):
    """``normal(mean, std)`` elementwise with a tensor mean and/or std (broadcast), or
    ``normal(mean, std, size)`` with numbers (0-d tensors too), as PyTorch's four overloads."""
    if size is None:
        mean, std = (v.item() if isinstance(v, _Number) and hasattr(v, "item") else v for v in (mean, std))
        return F.normal(mean, std, generator=generator, **kwargs)
    mean, std = (_number_argument("normal", name, value) for name, value in (("mean", mean), ("std", std)))
    check_layout("normal", layout)
    out = F.rand_normal(_sizes((size,)) if not isinstance(size, int) else (size,), mean, std,
                        generator=generator, **kwargs)
    return out.pin_memory() if pin_memory else out


def _number_argument(function: str, name: str, value) -> float:
    """A Python number, a NumPy scalar or a one-element tensor, as a float; else PyTorch's TypeError."""
    if hasattr(value, "_data"):
        if value.numel() != 1:
            raise TypeError(f"{function}(): size= goes with a number {name}; with a tensor {name} the result "
                            f"takes its shape (got {value.numel()} elements)")
        return float(value.item())
    return float_argument(function, name, value)


def randint_like(input, low=0, high=None, **kwargs):
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``, as in PyTorch."""
    if high is None:
        low, high = 0, low
    if high is None:
        raise TypeError("randint_like() missing required argument 'high'")
    return F.randint_like(input, low, high, **kwargs)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return F.einsum(equation, list(operands))


def _extremum(name: str, reduce_all: str, elementwise: str):
    with_dim = getattr(F, name)

    def function(input, dim=None, keepdim=False, *, other=None):
        if hasattr(dim, "_data"):
            if keepdim is not False or other is not None:  # max(input, other) takes nothing more
                raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not Tensor")
            return getattr(F, elementwise)(input, dim)
        if other is not None:
            return getattr(F, elementwise)(input, other)
        if dim is None:
            return getattr(F, reduce_all)(input)
        return with_dim(input, dim, keepdim)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{name}(input) -> tensor; {name}(input, dim, keepdim=False) -> (values, indices); " \
                       f"{name}(input, other) -> {elementwise}(input, other)"
    return function


max = _extremum("max", "amax", "maximum")
min = _extremum("min", "amin", "minimum")


def _whole_or_along(name: str):
    """median/nanmedian: of every element (a 0-d value; NaN for an empty input), or (values, indices) along dim."""
    along = getattr(F, name)

    def function(input, dim=None, keepdim=False):
        if dim is not None:
            return along(input, dim, keepdim)
        flat = F.reshape(input, (-1,))
        if flat.shape[0] == 0:
            return F.full((), float("nan"), dtype=input.dtype, device=input.device)
        return along(flat, 0).values
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{name}(input) -> tensor; {name}(input, dim, keepdim=False) -> (values, indices)"
    return function


def _moment(name: str):
    """var, std, var_mean, std_mean in PyTorch's three forms: ``(input, unbiased)``, ``(input, dim, unbiased,
    keepdim)`` and ``(input, dim, *, correction, keepdim)``; ``correction=None`` is Bessel's 1."""
    op = getattr(F, name)

    def function(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):  # var(input, unbiased): PyTorch's overload without dim
            if unbiased is not None:
                raise TypeError(f"{name}(): argument 'dim' must be a sequence of ints or an int, not bool")
            dim, unbiased = None, dim
        if unbiased is not None:
            if correction is not None:
                raise ArgumentError(f"{name}: cannot specify both unbiased and correction")
            if not isinstance(unbiased, bool):
                raise TypeError(f"{name}(): argument 'unbiased' must be bool, not {type(unbiased).__name__}")
            correction = int(unbiased)
        return op(input, dim, correction=1 if correction is None else correction, keepdim=keepdim)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{name}(input, dim=None, unbiased=True, keepdim=False, *, correction=1): " + \
        (op.__doc__ or "").split("\n\n")[-1]
    return function


var, std, var_mean, std_mean = (_moment(n) for n in ("var", "std", "var_mean", "std_mean"))
median = _whole_or_along("median")
nanmedian = _whole_or_along("nanmedian")


def cat(tensors, dim=0):
    """Tensors joined along dim. PyTorch's legacy rule holds: a 1-D tensor with no elements joins anything
    (``cat([torch.tensor([]), x])``, a common accumulator's start), still taking part in the result's dtype."""
    tensors = list(tensors)
    kept = [t for t in tensors if not (hasattr(t, "_data") and t._data.shape == (0,))]
    if kept and len(kept) < len(tensors):
        joined = F.cat(kept, dim)
        common = functools.reduce(promote_types, (t.dtype for t in tensors))
        return joined if joined.dtype is common else F.to_dtype(joined, common)
    return F.cat(tensors, dim)


def stack(tensors, dim=0):
    return F.stack(list(tensors), dim)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return F.nonzero(condition, as_tuple=True) if "nonzero" in OPS else None
    return F.where(condition, input, other)


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False):
    """``torch.embedding``: ``nn.functional.embedding``'s op in PyTorch's torch-level order (weight first), where
    a negative ``padding_idx`` means none. ``sparse`` is accepted; the weight's gradient is dense."""
    padding_idx = int_argument("embedding", "padding_idx", padding_idx, position=3)
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None, scale_grad_by_freq)


def clone(input, *, memory_format=None):
    """A copy of ``input`` in ``memory_format`` (default: ``preserve_format``, input's own layout, which is
    what the op keeps)."""
    out = F.clone(input)
    if memory_format is None or memory_format is preserve_format:
        return out
    return to_format(out, memory_format, "clone")


def gather(input, dim, index, *, sparse_grad: bool = False):
    """Values of input along dim at index. ``sparse_grad`` is accepted; input's gradient is dense."""
    return F.gather(input, dim, index)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5, cudnn_enabled: bool = True):
    """``torch.group_norm``: ``nn.functional.group_norm`` with PyTorch's torch-level ``cudnn_enabled``, a switch
    of its CUDA path that changes no result."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """The bucket of each of input's values among the sorted 1-D boundaries; a number input (PyTorch's Scalar
    overload) gives a 0-d tensor."""
    if isinstance(input, _Number) and hasattr(boundaries, "_data"):
        input = F.full((), input.item() if hasattr(input, "item") else input, device=boundaries.device)
    return F.bucketize(input, boundaries, out_int32=out_int32, right=right)


def _overridden() -> set:
    return {"zeros", "ones", "empty", "rand", "randn", "full", "arange", "randint", "einsum", "max", "min",
            "cat", "stack", "where", "normal", "randint_like", "median", "nanmedian", "var", "std", "var_mean",
            "std_mean", "embedding", "clone", "gather", "group_norm",
            "bucketize"}


_LIKE = ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like")


def _with_factory_keywords(function, op):
    """Creation functions take PyTorch's factory keywords: ``requires_grad``; where they take a device, also
    ``layout`` (Ember's tensors are all strided) and ``pin_memory`` (which, as in PyTorch, needs an
    accelerator); ``empty`` and the ``*_like`` functions also take ``memory_format``."""
    factory = "device" in op.param_index
    formats = op.name == "empty" or op.name in _LIKE
    default_format = preserve_format if op.name in _LIKE else contiguous_format
    default_layout = None if op.name in _LIKE else strided  # PyTorch's defaults: the *_like ones follow the input

    def creator(*args, requires_grad: bool = False, **kwargs):
        requires_grad = requires_grad is not None and bool_argument(op.name, "requires_grad", requires_grad)
        if factory:  # None: the default, as PyTorch's parser reads it for these two
            check_layout(op.name, kwargs.pop("layout", default_layout))
            pin = kwargs.pop("pin_memory", False)
            pin = pin is not None and bool_argument(op.name, "pin_memory", pin)
        if formats:
            fmt = kwargs.pop("memory_format", None)
            fmt = default_format if fmt is None else fmt  # None: the default, as in PyTorch
        out = function(*args, **kwargs)
        if formats:
            out = laid_out(out, fmt, args[0] if op.name in _LIKE and args else kwargs.get("input"), op.name)
        if factory and pin:
            out = out.pin_memory()
        return out.requires_grad_() if requires_grad else out
    creator.__name__, creator.__doc__ = function.__name__, function.__doc__
    keywords = [("out", None)] * op.accepts_out + [("requires_grad", False)] + ([("layout", default_layout), ("pin_memory", False)] if factory else []) + (
        [("memory_format", default_format)] if formats else [])
    creator.__signature__ = _with_keywords(inspect.signature(function), keywords)  # for help() and the stubs
    return creator


def laid_out(out, fmt, like, name: str):
    """``out`` in ``fmt``; ``preserve_format`` follows ``like``'s layout (channels_last stays channels_last)."""
    if fmt is preserve_format:
        if like is None or like.is_contiguous():
            return out
        fmt = next((f for f in (channels_last, channels_last_3d) if like.is_contiguous(memory_format=f)),
                   contiguous_format)
    return to_format(out, fmt, name)


def _with_keywords(signature: inspect.Signature, keywords: list) -> inspect.Signature:
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    rest = [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                               annotation="bool" if isinstance(default, bool) else inspect.Parameter.empty)
             for name, default in keywords if name not in signature.parameters]
    return signature.replace(parameters=params + added + rest)


def export(namespace: dict) -> None:
    """Put every op (or its public overload above) into ``namespace``."""
    own = globals()
    for name, op in OPS.items():
        function = own[name] if name in _overridden() else getattr(F, name)
        if name in _overridden() and op.accepts_out and "out" not in inspect.signature(function).parameters:
            function = accepting_out(function, name)
        if op.category in ("creation", "random") and not op.name.endswith("_"):
            function = _with_factory_keywords(function, op)
        namespace[name] = function
    for alias, name in ALIASES.items():
        namespace[alias] = namespace[name]
    for module in (_grids, _histograms, _sets):  # varargs forms, and functions picking an op's outputs
        namespace.update(module.FUNCTIONS)
    for name in TORCH_INPLACE_FUNCTIONS:
        if hasattr(Tensor, name):  # the in-place op exists (the Tensor surface is installed first)
            namespace[name] = inplace_function(name)
