"""The public functions (``ember.add``, ``ember.zeros``, ...): one per op, plus PyTorch's overloads."""
from __future__ import annotations

import inspect

from .aliases import ALIASES, TORCH_INPLACE_FUNCTIONS, inplace_function
from .dispatch.ops import F
from .dispatch.ops.shapes import grids as _grids
from .dispatch.ops.reductions import histograms as _histograms
from .dispatch.ops.indexing import sets as _sets
from .dispatch.execution.out_argument import accepting_out
from .dispatch.schema import OPS
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


def arange(start, end=None, step=1, **kwargs):
    return F.arange(start, end, step, **kwargs)


def randint(low, high=None, size=None, **kwargs):
    """``randint(high, size)`` or ``randint(low, high, size)``, as in PyTorch."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    return F.randint(low, high, size, **kwargs)


def normal(mean, std=1.0, size=None, *, generator=None, **kwargs):
    """``normal(mean, std)`` elementwise with a tensor mean and/or std (broadcast), or
    ``normal(mean, std, size)`` with numbers, as PyTorch's four overloads."""
    if size is None:
        return F.normal(mean, std, generator=generator, **kwargs)
    if hasattr(mean, "_data") or hasattr(std, "_data"):
        raise TypeError("normal(): size= goes with a number mean and std; with a tensor mean or std the "
                        "result takes their broadcast shape")
    return F.rand_normal(_sizes((size,)) if not isinstance(size, int) else (size,), float(mean), float(std),
                         generator=generator, **kwargs)


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


median = _whole_or_along("median")
nanmedian = _whole_or_along("nanmedian")


def cat(tensors, dim=0):
    return F.cat(list(tensors), dim)


def stack(tensors, dim=0):
    return F.stack(list(tensors), dim)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return F.nonzero(condition, as_tuple=True) if "nonzero" in OPS else None
    return F.where(condition, input, other)


def _overridden() -> set:
    return {"zeros", "ones", "empty", "rand", "randn", "full", "arange", "randint", "einsum", "max", "min",
            "cat", "stack", "where", "normal", "randint_like", "median", "nanmedian"}


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
        if factory:
            check_layout(op.name, kwargs.pop("layout", default_layout))
            pin = kwargs.pop("pin_memory", False)
        if formats:
            fmt = kwargs.pop("memory_format", default_format)
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
