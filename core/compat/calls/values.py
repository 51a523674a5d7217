"""Argument values that both frameworks can be given: each is built afresh for one library per call.

A ``Value`` is library-neutral (``tensor((2, 3), float32)``, ``Size([2, 3])``, ``np.int64(1)``), so that the
same call can be made on PyTorch and on Ember, each with its own objects, and an in-place op on one cannot
touch the other's inputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

TENSOR_KINDS = ("float", "index", "bool", "int")


@dataclass(frozen=True)
class Value:
    """``kind``: ``tensor``, ``python`` (a number, str, None, bool), ``numpy`` (a NumPy scalar), ``ndarray``,
    ``dtype`` (``float64``), ``size``, ``list`` or ``tuple`` (of Values), ``slice`` or ``ellipsis``."""
    kind: str
    data: Any = None
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    fill: str = "float"

    def make(self, lib, device: str | None = None) -> Any:
        """This value as ``lib``'s object; tensors on ``device`` (the library's default where None)."""
        if self.kind == "tensor":
            return lib.tensor(_array(self.shape, self.fill).tolist(), dtype=getattr(lib, self.dtype), device=device)
        if self.kind == "python":
            return self.data
        if self.kind == "numpy":
            return np.dtype(self.dtype).type(self.data)
        if self.kind == "dtype":
            return getattr(lib, self.data)
        if self.kind == "size":
            return lib.Size(self.data)
        if self.kind in ("list", "tuple"):
            items = [v.make(lib, device) for v in self.data]
            return items if self.kind == "list" else tuple(items)
        if self.kind == "ndarray":
            return _array(self.shape, self.fill).astype(self.dtype)
        if self.kind == "slice":
            return slice(*self.data)
        if self.kind == "ellipsis":
            return Ellipsis
        raise ValueError(f"unknown value kind {self.kind!r}")

    def __str__(self) -> str:
        if self.kind == "tensor":
            return f"tensor({self.shape}, {self.dtype})"
        if self.kind == "numpy":
            return f"np.{self.dtype}({self.data!r})"
        if self.kind == "dtype":
            return self.data
        if self.kind == "size":
            return f"Size({list(self.data)})"
        if self.kind == "ndarray":
            return f"ndarray({self.shape}, {self.dtype})"
        if self.kind == "slice":
            return ":".join("" if v is None else str(v) for v in self.data)
        if self.kind == "ellipsis":
            return "..."
        if self.kind in ("list", "tuple"):
            inner = ", ".join(str(v) for v in self.data)
            return f"[{inner}]" if self.kind == "list" else f"({inner}{',' if len(self.data) == 1 else ''})"
        return repr(self.data)


def _array(shape: tuple[int, ...], fill: str) -> np.ndarray:
    """Small values every op takes: floats in (0, 1) (log, sqrt, acos stay finite), indices 0 or 1 (valid
    along any dim of size >= 2), alternating bools, small positive ints."""
    n = int(np.prod(shape)) if shape else 1
    steps = np.arange(n).reshape(shape)
    if fill == "index":
        return steps % 2
    if fill == "bool":
        return steps % 2 == 0
    if fill == "int":
        return steps % 5 + 1
    values = (steps % 7 + 1) / 8.0
    if len(shape) >= 2 and shape[-1] == shape[-2] > 1:  # square: symmetric positive-definite, as every
        values = values @ np.swapaxes(values, -1, -2) / shape[-1] + np.eye(shape[-1]) / 2  # factorization takes
    return values


def tensor(shape: tuple[int, ...], dtype: str = "float32", fill: str | None = None) -> Value:
    if fill is None:
        fill = {"int64": "int", "int32": "int", "uint8": "int", "bool": "bool"}.get(dtype, "float")
    return Value("tensor", shape=tuple(shape), dtype=dtype, fill=fill)


def py(data: Any) -> Value:
    return Value("python", data)


def npy(data: Any, dtype: str) -> Value:
    return Value("numpy", data, dtype=dtype)


def ints(items, kind: str = "list") -> Value:
    return Value(kind, tuple(py(i) for i in items))


def literal(text: str, type_: str) -> Value | None:
    """A declared default as a Value (``None``, ``False``, ``1``, ``[]``, ``"mean"``), None when it has no
    Python spelling (``at::Reduction::Mean``, ``contiguous_format``)."""
    import ast

    if type_.startswith("ScalarType") or type_.startswith(("Layout", "Device", "MemoryFormat", "Generator")):
        return py(None) if text == "None" else None
    try:
        value = ast.literal_eval(text.replace("[", "(").replace("]", ")") if text.startswith("[") else text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, tuple):
        return ints(value)
    return py(value)
