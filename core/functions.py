"""The public functions (``ember.add``, ``ember.zeros``, ...): one per op, plus PyTorch's overloads."""
from __future__ import annotations

import inspect

from .dispatch.ops import F
from .dispatch.schema import OPS


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


def cat(tensors, dim=0):
    return F.cat(list(tensors), dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    return F.stack(list(tensors), dim)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return F.nonzero(condition, as_tuple=True) if "nonzero" in OPS else None
    return F.where(condition, input, other)


# Aliases PyTorch users reach for.
absolute = F.abs
negative = F.neg
multiply = F.mul
divide = F.div
true_divide = F.div
subtract = F.sub
greater = F.gt
greater_equal = F.ge
less = F.lt
less_equal = F.le
not_equal = F.ne
clip = F.clamp
swapaxes = F.transpose


def _overridden() -> set:
    return {"zeros", "ones", "empty", "rand", "randn", "full", "arange", "randint", "einsum", "max", "min",
            "cat", "stack", "where", "normal", "randint_like"}


def _accepting_requires_grad(function):
    """Creation functions take PyTorch's ``requires_grad=`` keyword."""
    def creator(*args, requires_grad: bool = False, **kwargs):
        out = function(*args, **kwargs)
        return out.requires_grad_() if requires_grad else out
    creator.__name__, creator.__doc__ = function.__name__, function.__doc__
    creator.__signature__ = _with_requires_grad(inspect.signature(function))  # for help() and the .pyi stubs
    return creator


def _with_requires_grad(signature: inspect.Signature) -> inspect.Signature:
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    keywords = [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
    flag = inspect.Parameter("requires_grad", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")
    return signature.replace(parameters=params + [flag] + keywords)


def export(namespace: dict) -> None:
    """Put every op (or its public overload above) into ``namespace``."""
    own = globals()
    for name, op in OPS.items():
        function = own[name] if name in _overridden() else getattr(F, name)
        if op.category in ("creation", "random") and not op.name.endswith("_"):
            function = _accepting_requires_grad(function)
        namespace[name] = function
    for name in ("concat", "concatenate", "absolute", "negative", "multiply", "divide", "true_divide",
                 "subtract", "greater", "greater_equal", "less", "less_equal", "not_equal", "clip", "swapaxes"):
        namespace[name] = own[name]
