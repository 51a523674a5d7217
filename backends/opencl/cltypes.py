"""Ember dtypes as NumPy dtypes (for host copies and kernel scalars) and OpenCL C types.

Booleans are stored as ``uchar`` 0/1. float16 is stored as ``half`` and computed in
``float`` (``vload_half``/``vstore_half``), on devices with ``cl_khr_fp16`` only.
OpenCL C has no bfloat16 type, so no device supports it. OpenCL C has no complex type either: a complex
element is stored and computed as its (real, imaginary) pair, a ``float2``/``double2`` (``convert`` moves
values between real and complex types; ``ember.backends.codegen``'s complex dialect does their arithmetic).
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import dtypes as d

NUMPY_DTYPE = {
    d.bool_: np.dtype(np.bool_), d.uint8: np.dtype(np.uint8), d.int8: np.dtype(np.int8),
    d.int16: np.dtype(np.int16), d.int32: np.dtype(np.int32), d.int64: np.dtype(np.int64),
    d.float16: np.dtype(np.float16), d.float32: np.dtype(np.float32), d.float64: np.dtype(np.float64),
    d.complex64: np.dtype(np.complex64), d.complex128: np.dtype(np.complex128),
}
EMBER_DTYPE = {v: k for k, v in NUMPY_DTYPE.items()}

#: the C type a buffer element is stored as
STORAGE_CTYPE = {
    np.dtype(np.bool_): "uchar", np.dtype(np.uint8): "uchar", np.dtype(np.int8): "char",
    np.dtype(np.int16): "short", np.dtype(np.int32): "int", np.dtype(np.int64): "long",
    np.dtype(np.float16): "half", np.dtype(np.float32): "float", np.dtype(np.float64): "double",
    # OpenCL C has no complex type: a complex element is its (real, imaginary) pair as a two-vector
    np.dtype(np.complex64): "float2", np.dtype(np.complex128): "double2",
}


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def compute_ctype(dtype: np.dtype) -> str:
    """The C type arithmetic on ``dtype`` runs in: half precision widens to float."""
    return "float" if dtype == np.float16 else STORAGE_CTYPE[dtype]


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def load(dtype: np.dtype, pointer: str, index: str) -> str:
    """C expression reading element ``index`` of buffer ``pointer`` as its compute type."""
    if dtype == np.float16:
        return f"vload_half({index}, {pointer})"
    return f"{pointer}[{index}]"


def store(dtype: np.dtype, pointer: str, index: str, value: str) -> str:
    """C statement writing ``value`` (any arithmetic type) to element ``index``, converted C-style; into an
    integer type through ``long``, as PyTorch and NumPy convert floats (C's direct float-to-narrow conversion is
    undefined out of range, and GPUs saturate it: -2.0 would store 0 in uint8, not 254)."""
    if dtype == np.float16:
        return f"vstore_half_rte((float)({value}), {index}, {pointer});"
    if dtype.kind == "c":  # (a cast would broadcast a real value to both parts: ``convert`` it first)
        return f"{pointer}[{index}] = {value};"
    if dtype == np.bool_:
        return f"{pointer}[{index}] = (uchar)(({value}) != 0);"
    if dtype.kind in "iu" and dtype.itemsize < 8:
        return f"{pointer}[{index}] = ({STORAGE_CTYPE[dtype]})(long)({value});"
    return f"{pointer}[{index}] = ({STORAGE_CTYPE[dtype]})({value});"


def convert(value: str, source: np.dtype, target: np.dtype) -> str:
    """C expression: ``value``, of ``source``'s compute type, as ``target``'s where either is complex (a real
    value gets imaginary part 0; a complex one keeps its real part, or to bool, whether it is non-zero, as
    NumPy's and PyTorch's casts do); otherwise ``value`` itself, which ``store`` converts C-style."""
    if source.kind != "c" and target.kind != "c":
        return value
    if source.kind != "c":
        component = "float" if target == np.complex64 else "double"
        return f"(({STORAGE_CTYPE[target]})(({component})({value}), 0))"
    if target.kind == "c":
        return value if source == target else f"convert_{STORAGE_CTYPE[target]}({value})"
    if target == np.bool_:
        return f"(({value}).x != 0 || ({value}).y != 0)"
    return f"({value}).x"


def scalar_arg(value, dtype: np.dtype):
    """A Python number as a kernel argument of ``dtype``, wrapping integers C-style (-1 -> 255 for uint8)."""
    if dtype == np.bool_:
        return np.uint8(bool(value))
    if dtype == np.float16:
        return np.float32(value)
    try:
        return np.array(value, dtype=dtype)[()]
    except (OverflowError, ValueError):
        return np.array(value).astype(dtype)[()]


def arg_dtype(dtype: np.dtype) -> np.dtype:
    """The NumPy dtype of a kernel's scalar argument holding a ``dtype`` value."""
    if dtype == np.bool_:
        return np.dtype(np.uint8)
    if dtype == np.float16:
        return np.dtype(np.float32)
    return dtype


def sqrt_function(ctype: str, cpu: bool) -> str:
    """The square root to call in a hot loop. On CPU devices the compiler's own builtin: PoCL's ``sqrt`` is
    a call into its kernel library (built for another CPU target), which stops the work-group loop from
    being vectorized (3.5x slower Adam steps); clang's builtin becomes one vector instruction, correctly
    rounded as ``sqrt`` is (OpenCL allows ``sqrt`` 3 ulp). Other devices keep OpenCL's ``sqrt``."""
    if cpu and ctype in ("float", "double"):
        return "__builtin_sqrtf" if ctype == "float" else "__builtin_sqrt"
    return "sqrt"
