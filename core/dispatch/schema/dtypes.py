"""Ember's dtypes: plain objects compared by identity, named as PyTorch names them."""
from __future__ import annotations


class dtype:
    """A tensor element type. Instances are singletons: compare with ``is`` or ``==``."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex", "is_inexact", "is_signed", "kind", "_rank")

    def __init__(self, name: str, itemsize: int, kind: str, is_signed: bool, rank: int):
        self.name = name
        self.itemsize = itemsize
        self.kind = kind  # "bool", "int", "float" or "complex": the promotion category
        self.is_floating_point = kind == "float"
        self.is_complex = kind == "complex"
        # floating or complex (NumPy's "inexact"): values that carry gradients and are not counts
        self.is_inexact = kind in ("float", "complex")
        self.is_signed = is_signed
        self._rank = rank

    def to_real(self) -> "dtype":
        """The component dtype of a complex dtype (complex64 -> float32); any other dtype itself."""
        return _REAL_OF.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex dtype with this floating dtype's components (float64 -> complex128). float16 and
        bfloat16 give complex64: Ember has no complex32 (PyTorch's float16 gives it)."""
        if self.kind == "complex":
            return self
        if self.kind != "float":
            raise TypeError(f"to_complex: {self} is not a floating dtype")
        return complex128 if self is float64 else complex64

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", 1, "bool", False, 0)
uint8 = dtype("uint8", 1, "int", False, 1)
int8 = dtype("int8", 1, "int", True, 2)
int16 = dtype("int16", 2, "int", True, 3)
int32 = dtype("int32", 4, "int", True, 4)
int64 = dtype("int64", 8, "int", True, 5)
float16 = dtype("float16", 2, "float", True, 6)
bfloat16 = dtype("bfloat16", 2, "float", True, 7)
float32 = dtype("float32", 4, "float", True, 8)
float64 = dtype("float64", 8, "float", True, 9)
complex64 = dtype("complex64", 8, "complex", True, 10)
complex128 = dtype("complex128", 16, "complex", True, 11)
_REAL_OF = {complex64: float32, complex128: float64}

#: Every dtype Ember has. A backend supports complex only by listing it (``Backend.supported_dtypes``), and an op
#: computes in complex only where its schema says so (``OpDef.dtypes`` with "+complex").
ALL_DTYPES: tuple[dtype, ...] = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
                                 complex64, complex128)
REAL_DTYPES = tuple(d for d in ALL_DTYPES if d.kind != "complex")
INT_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "int")
FLOAT_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "float")
COMPLEX_DTYPES = (complex64, complex128)

#: PyTorch's C++ ScalarType names, which its error messages use ("expected scalar type Long but found Byte")
SCALAR_TYPE_NAMES = {bool_: "Bool", uint8: "Byte", int8: "Char", int16: "Short", int32: "Int", int64: "Long",
                     float16: "Half", bfloat16: "BFloat16", float32: "Float", float64: "Double",
                     complex64: "ComplexFloat", complex128: "ComplexDouble"}

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"bool_": bool_, "half": float16, "float": float32, "double": float64,
                 "short": int16, "int": int32, "long": int64, "cfloat": complex64, "cdouble": complex128})


def from_name(name: str) -> dtype:
    """Look a dtype up by its name or a PyTorch alias ("float", "long", "half", ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype {name!r}; known: {', '.join(d.name for d in ALL_DTYPES)}") from None


# pickles of a dtype call from_name under the path every Ember version can import (ember.dispatch keeps it as
# an alias of this module), so files written now load in versions from before ember.dispatch had rooms too
from_name.__module__ = "ember.dispatch.dtypes"


def as_dtype(value) -> dtype:
    """Accept an Ember dtype, a dtype name, a NumPy dtype or a Python type."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str):
        return from_name(value)
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return _default_float[0]
    if value is complex:
        return get_default_complex_dtype()
    name = getattr(value, "name", None) or getattr(getattr(value, "dtype", None), "name", None)
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"cannot interpret {value!r} as an ember dtype")


_default_float = [float32]


def get_default_dtype() -> dtype:
    return _default_float[0]


def get_default_complex_dtype() -> dtype:
    """The dtype Python complex numbers take: the complex of the default float dtype, as in PyTorch."""
    return _default_float[0].to_complex()


def set_default_dtype(d) -> None:
    """Set the dtype that Python floats and float-producing ops of integer inputs take."""
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating dtypes can be the default, got {d}")
    _default_float[0] = d
