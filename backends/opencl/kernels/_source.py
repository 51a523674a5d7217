"""Small helpers the kernels share: parameter lists, coordinate splitting, a kernel cache keyed by what a
kernel is specialized on (rank, dtypes), never by sizes, and the complex helper functions a kernel calls.
"""
from __future__ import annotations

import numpy as np

from ember.backends.codegen import OPENCL, complex_c

from ..cltypes import EMBER_DTYPE, STORAGE_CTYPE

LONG = np.dtype(np.int64)

_KERNELS: dict = {}


class Params:
    """A kernel's parameter declarations and the matching ``set_scalar_arg_dtypes`` list."""

    def __init__(self) -> None:
        self.decls: list[str] = []
        self.dtypes: list = []

    def buffer(self, name: str, dtype: np.dtype, const: bool = True) -> "Params":
        self.decls.append(f"__global {'const ' if const else ''}{STORAGE_CTYPE[dtype]} *{name}")
        self.dtypes.append(None)
        return self

    def local(self, name: str, ctype: str) -> "Params":
        self.decls.append(f"__local {ctype} *{name}")
        self.dtypes.append(None)
        return self

    def longs(self, *names: str) -> "Params":
        for name in names:
            self.decls.append(f"const long {name}")
            self.dtypes.append(LONG)
        return self

    def text(self) -> str:
        return ", ".join(self.decls)


def names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(count)]


def split(linear: str, dims: list[str], coords: list[str], temp: str) -> str:
    """C statements declaring ``long coords[k]``: ``linear`` split in row-major order over ``dims``."""
    if not dims:
        return ""
    lines = [f"long {temp} = {linear};"]
    for k in range(len(dims) - 1, 0, -1):
        lines.append(f"const long {coords[k]} = {temp} % {dims[k]}; {temp} /= {dims[k]};")
    lines.append(f"const long {coords[0]} = {temp};")
    return "\n    ".join(lines)


def batch_walk(pairs: list[tuple[str, str]], dims: int) -> str:
    """C statements moving each (offset variable, strides prefix) pair to batch element ``q`` of the
    ``bd0..`` batch dims: ``offset += (q % bd{d}) * {prefix}{d}``, last dim first."""
    lines = []
    for d in range(dims - 1, -1, -1):
        moves = " ".join(f"{offset} += (q % bd{d}) * {prefix}{d};" for offset, prefix in pairs)
        lines.append(f"{moves} q /= bd{d};")
    return "\n    ".join(lines)


def dot(base: str, coords: list[str], strides: list[str]) -> str:
    """C expression ``base + coords . strides``."""
    return " + ".join([base] + [f"{c} * {s}" for c, s in zip(coords, strides)])


def cached(runtime, key: tuple, build):
    """The compiled kernel for ``key``; ``build()`` gives (source, name, scalar dtypes) on first use."""
    full = (runtime.index,) + key
    kernel = _KERNELS.get(full)
    if kernel is None:
        source, name, scalar_dtypes = build()
        kernel = _KERNELS[full] = runtime.programs.kernel(source, name, scalar_dtypes)
    return kernel


def complex_helpers(dtype: np.dtype) -> str:
    """The codegen's complex helper functions (cmul, cexp, ...) for ``dtype`` values; none for real dtypes."""
    return complex_c.helpers(OPENCL, EMBER_DTYPE[dtype]) if dtype.kind == "c" else ""


def complex_call(name: str, dtype: np.dtype, *args: str) -> str:
    """C calling complex helper ``name`` (add, mul, exp, asin, ...: ``complex_c``) of ``dtype`` values."""
    return f"{complex_c.function(name, EMBER_DTYPE[dtype])}({', '.join(args)})"


def group_size(runtime, count: int) -> int:
    """The work-group size for ``count`` items a group: a power of two covering them where the device has one
    (``runtime.covering_group``), else the device's largest."""
    return runtime.covering_group(count)


def overlaps(a, b) -> bool:
    return a.buffer is b.buffer or getattr(a.buffer, "int_ptr", 0) == getattr(b.buffer, "int_ptr", 1)
