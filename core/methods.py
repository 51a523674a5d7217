"""Tensor methods and Python operators, generated from the op schema."""
from __future__ import annotations

from .aliases import ALIASES, positive
from .dispatch import dispatcher
from .dispatch.binding import tensor_argument
from .dispatch.dtypes import float64
from .dispatch.errors import DtypeError, ShapeError
from .dispatch.ops import F
from .dispatch.promotion import can_cast
from .dispatch.schema import OPS, OpDef
from .tensor import Tensor

_call = dispatcher.call
_VARARG_SIZE_METHODS = {"view", "reshape", "permute", "expand", "repeat"}


def _method(op: OpDef):
    fast = getattr(F, op.name)
    if fast.is_fast_path:
        return fast
    if op.name in _VARARG_SIZE_METHODS:
        sizes_name = op.params[1].name

        def method(self, *size, **kwargs):
            if not size:  # x.permute(): PyTorch's TypeError (a 0-d tensor takes permute(()))
                if sizes_name in kwargs:
                    return _call(op, (self,), kwargs)
                raise TypeError(f'{op.name}() missing 1 required positional arguments: "{sizes_name}"')
            if len(size) == 1 and isinstance(size[0], (list, tuple)):
                size = tuple(size[0])
            return _call(op, (self, size), kwargs)
    else:
        def method(self, *args, **kwargs):
            return _call(op, (self,) + args, kwargs)
    method.__name__ = op.name
    method.__doc__ = f"Tensor.{op.signature}\n\n{op.doc}".strip()
    return method


def write_result(target: Tensor, result: Tensor, op_name: str) -> Tensor:
    """Copy an out-of-place result into ``target``, as every in-place op does: same shape, castable dtype."""
    if not can_cast(result._dtype, target._dtype):
        raise DtypeError(f"{op_name}_: result type {result._dtype.name} can't be cast to the desired output type "
                         f"{target._dtype.name} (tensor of shape {tuple(target.shape)} on {target._device})")
    if tuple(result._data.shape) != tuple(target._data.shape):
        raise ShapeError(f"{op_name}_: output with shape {tuple(target.shape)} doesn't match the broadcast shape "
                         f"{tuple(result.shape)}")
    return _copy_into(target, result)


def _copy_into(target: Tensor, source: Tensor) -> Tensor:
    """``target.copy_(source)`` for tensors on one device."""
    return F.copy_(target, source)


def _inplace_method(op: OpDef):
    compute = getattr(F, op.name)  # the fast path when there is one

    def method(self, *args, **kwargs):
        return write_result(self, compute(self, *args, **kwargs), op.name)
    method.__name__ = op.name + "_"
    method.__doc__ = f"In-place {op.name}: writes the result into self."
    return method


def _binary_operator(name: str, reflected: bool = False):
    function = getattr(F, name)
    if not reflected:
        return function

    def operator(self, other):
        return function(other, self)
    return operator


def _inplace_operator(name: str):
    compute = getattr(F, name)

    def operator(self, other):
        return write_result(self, compute(self, other), name)
    return operator


def _float_power_(self, exponent):
    """PyTorch computes float_power in float64, so only a float64 tensor can take its result in place."""
    if self._dtype is not float64:
        raise DtypeError(f"float_power_: the base given to float_power_ has dtype {self._dtype.name} but the "
                         f"operation's result requires dtype float64 (tensor of shape {tuple(self.shape)} on "
                         f"{self._device})")
    return write_result(self, F.float_power(self, exponent), "float_power")


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = F.full((), src, dtype=self._dtype, device=self._device)
    elif src._device is not self._device:
        src = src.to(self._device)
    return _copy_into(self, src)


def _fill_(self, value):
    return F.copy_(self, F.full((), value, dtype=self._dtype, device=self._device))


def _zero_(self):
    return _fill_(self, 0)


def _random_(self, *args, generator=None, **kwargs):
    """``random_()``, ``random_(to)`` or ``random_(from, to)``: a lone positional argument is ``to``."""
    if len(args) == 1 and not kwargs:
        return F.random_(self, 0, args[0], generator=generator)
    return F.random_(self, *args, generator=generator, **kwargs)


def _size_method(name):
    def method(self, *sizes):
        return getattr(F, name)(self, sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple))
                                else sizes)
    return method


def _like_method(name: str, op):
    """``expand_as``/``view_as``/``reshape_as``: ``op`` to the shape of the tensor ``other``."""
    def method(self, other):
        return op(self, tuple(tensor_argument(name, "other", other, position=1).shape))
    method.__name__ = method.__qualname__ = name
    return method


def _install_aliases() -> None:
    """PyTorch's other names for ops (``Tensor.arccos`` is ``Tensor.acos``), in-place forms included."""
    for alias, name in ALIASES.items():
        for suffix in ("", "_"):
            if hasattr(Tensor, name + suffix) and not hasattr(Tensor, alias + suffix):
                setattr(Tensor, alias + suffix, getattr(Tensor, name + suffix))
    Tensor.positive = positive


def install() -> None:
    for name, op in OPS.items():
        if op.method and not hasattr(Tensor, name):
            setattr(Tensor, name, _method(op))
        if op.inplace and not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _inplace_method(op))
    for dunder, name in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                         ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow"),
                         ("matmul", "matmul")]:
        setattr(Tensor, f"__{dunder}__", _binary_operator(name))
        setattr(Tensor, f"__r{dunder}__", _binary_operator(name, reflected=True))
        if name != "matmul":
            setattr(Tensor, f"__i{dunder}__", _inplace_operator(name))
    for dunder, name in [("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge")]:
        setattr(Tensor, f"__{dunder}__", _binary_operator(name))
    for dunder, name in [("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                         ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")]:
        setattr(Tensor, f"__{dunder}__", _binary_operator(name))
        setattr(Tensor, f"__r{dunder}__", _binary_operator(name, reflected=True))
        setattr(Tensor, f"__i{dunder}__", _inplace_operator(name))
    Tensor.__neg__ = lambda self: F.neg(self)
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = lambda self: F.abs(self)
    Tensor.__invert__ = lambda self: F.bitwise_not(self)
    _install_aliases()
    Tensor.copy_ = _copy_
    Tensor.float_power_ = _float_power_
    Tensor.fill_ = _fill_
    Tensor.zero_ = _zero_
    Tensor.T = property(lambda self: F.permute(self, tuple(reversed(range(self.ndim)))))
    Tensor.mT = property(lambda self: F.transpose(self, -2, -1))
    Tensor.where = lambda self, condition, other: F.where(condition, self, other)
    Tensor.random_ = _random_
    Tensor.polygamma = lambda self, n: F.polygamma(n, self)  # torch.polygamma(n, input) takes n first
    Tensor.polygamma_ = lambda self, n: write_result(self, F.polygamma(n, self), "polygamma")
    Tensor.expand_as = _like_method("expand_as", F.expand)
    Tensor.view_as = _like_method("view_as", F.view)
    Tensor.reshape_as = _like_method("reshape_as", F.reshape)
    from .dispatch.ops import products, sets  # methods whose form differs from their op's: dot(other), unique
    for name, method in {**products.METHODS, **sets.METHODS}.items():
        setattr(Tensor, name, method)
    from . import functions
    Tensor.max = functions.max  # self binds to input; Python checks the argument count at the call
    Tensor.min = functions.min
    Tensor.median = functions.median
    Tensor.nanmedian = functions.nanmedian
