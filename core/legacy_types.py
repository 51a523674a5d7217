"""PyTorch's legacy constructors and tensor type names.

``ember.Tensor(data)``, ``ember.Tensor(2, 3)``, ``ember.FloatTensor([1, 2])``, ``ember.LongTensor(4)``,
``isinstance(t, ember.LongTensor)`` (a dtype and device-type check, as in PyTorch: these classes are
not subclasses of ``ember.Tensor``), ``t.type()`` and ``t.type("torch.LongTensor")``.

``t.type()`` returns PyTorch's own strings ("torch.FloatTensor", "torch.cuda.LongTensor"; other
device types likewise, "torch.opencl.FloatTensor"), so that ported code comparing against those
literals keeps working; ``t.type(spec)`` accepts them with either a "torch." or an "ember." prefix.
"""
from __future__ import annotations

from typing import Any

from .dispatch.contract import registry
from .dispatch.schema.defaults import get_default_device
from .dispatch.schema.dtypes import (as_dtype, bfloat16, bool_, complex64, complex128, dtype as DType, float16,
                                     float32, float64, get_default_dtype, int8, int16, int32, int64, uint8)
from .dispatch.ops import F
from .tensor import Size, Tensor

TYPE_NAMES: dict[DType, str] = {
    float32: "FloatTensor", float64: "DoubleTensor", float16: "HalfTensor", bfloat16: "BFloat16Tensor",
    int64: "LongTensor", int32: "IntTensor", int16: "ShortTensor", int8: "CharTensor", uint8: "ByteTensor",
    bool_: "BoolTensor"}
#: the names type strings use: complex ones too, for which PyTorch has type strings but no legacy classes
TYPE_STRING_NAMES = {**TYPE_NAMES, complex64: "ComplexFloatTensor", complex128: "ComplexDoubleTensor"}
_DTYPES_BY_NAME = {name: dt for dt, name in TYPE_STRING_NAMES.items()}


# -- construction ---------------------------------------------------------------------------------


def construct(dt: DType | None, device_type: str | None, name: str, args: tuple, kwargs: dict) -> Tensor:
    """The legacy constructor: no arguments (an empty 1-D tensor), sizes (uninitialized values), a
    ``Size``, data (a list, tuple or NumPy array), or a tensor (an alias sharing its storage)."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"{name}(): unexpected keyword argument(s) {sorted(kwargs)}; only device= is accepted")
    dev = _device(name, device, device_type)
    target = dt or get_default_dtype()
    if not args:
        return F.empty((0,), dtype=target, device=dev)
    if len(args) == 1 and not _is_size(args[0]):
        return _from_data(name, args[0], dt, target, dev)
    sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
    if not all(_is_size(s) for s in sizes):
        raise TypeError(f"{name}(): expected data (a list, tuple or array), a tensor, or sizes (ints), "
                        f"got {tuple(type(a).__name__ for a in args)}")
    return F.empty(tuple(sizes), dtype=target, device=dev)


def _is_size(value) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, Size)


def _device(name: str, device, device_type: str | None):
    if device is None:
        return registry.resolve_device(device_type) if device_type else (
            get_default_device())
    resolved = registry.resolve_device(device)
    if device_type and resolved.type != device_type:
        raise RuntimeError(f"{name}(): expected a {device_type} device, got {resolved}")
    return resolved


def _from_data(name: str, data, dt: DType | None, target: DType, dev) -> Tensor:
    if isinstance(data, Tensor):
        if dt is not None and data.dtype is not dt:
            raise TypeError(f"{name}(): expected a tensor of dtype {dt.name}, got {data.dtype.name}")
        return data.view(tuple(data.shape))  # an alias, as PyTorch's: same storage, autograd connected
    if isinstance(data, str):
        raise TypeError(f"{name}(): invalid data type 'str'")
    if not hasattr(data, "__len__"):
        raise TypeError(f"{name}(): data must be a sequence (got {type(data).__name__})")
    from .creation import tensor
    return tensor(data, dtype=target, device=dev)


# -- the type classes -------------------------------------------------------------------------------


class LegacyTensorType(type):
    """The metaclass of ``ember.FloatTensor`` and friends: calling constructs, isinstance checks dtype."""

    dtype: DType
    device_type: str

    def __call__(cls, *args, **kwargs) -> Tensor:
        return construct(cls.dtype, cls.device_type, cls.__name__, args, dict(kwargs))

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _type_class(dt: DType, device_type: str, module: str) -> LegacyTensorType:
    return LegacyTensorType(TYPE_NAMES[dt], (), {
        "dtype": dt, "device_type": device_type, "__module__": module, "is_cuda": device_type == "cuda",
        "__doc__": f"{device_type} tensors of dtype {dt.name}: a legacy constructor and an isinstance check"})


CPU_TYPES = {name: _type_class(dt, "cpu", "ember") for dt, name in TYPE_NAMES.items()}
CUDA_TYPES = {name: _type_class(dt, "cuda", "ember.cuda") for dt, name in TYPE_NAMES.items()}


# -- Tensor.type ------------------------------------------------------------------------------------


def type_string(t: Tensor) -> str:
    """PyTorch's type string: "torch.FloatTensor", "torch.cuda.LongTensor"."""
    device = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"torch.{device}{TYPE_STRING_NAMES[t.dtype]}"


def convert(t: Tensor, spec=None, non_blocking: bool = False, **kwargs):
    """``t.type()``: the type string; ``t.type(spec)``: ``t`` as that type (``t`` itself when it already is).

    ``spec`` is a dtype, a type class (``ember.LongTensor``, ``ember.cuda.FloatTensor``) or a type string.
    """
    if spec is None and "dtype" in kwargs:
        spec = kwargs.pop("dtype")
    if kwargs:
        raise TypeError(f"type(): unexpected keyword argument(s) {sorted(kwargs)}")
    if spec is None:
        return type_string(t)
    if isinstance(spec, LegacyTensorType):
        dt, device_type = spec.dtype, spec.device_type
    elif isinstance(spec, str):
        dt, device_type = _parse(spec)
    else:
        dt, device_type = as_dtype(spec), t.device.type
    if device_type != t.device.type:
        t = t.to(device_type)
    return t.to(dt)


def _parse(spec: str) -> tuple[DType, str]:
    prefix, _, rest = spec.partition(".")
    device_type, _, name = rest.rpartition(".")
    if prefix not in ("torch", "ember") or name not in _DTYPES_BY_NAME or "." in device_type:
        raise ValueError(f"invalid type: {spec!r} (expected a name like 'torch.FloatTensor' or "
                         f"'torch.cuda.LongTensor')")
    return _DTYPES_BY_NAME[name], device_type or "cpu"


def typename(obj: Any, /) -> str:
    """The type's name as PyTorch spells it: a tensor's legacy type (``torch.FloatTensor``, as
    ``Tensor.type()`` returns it), else ``module.QualifiedName`` (builtins unqualified)."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in (None, "builtins") else f"{module}.{name}"
