"""Tensors as contiguous NumPy arrays for the MPI engine, and the write-back that makes results in-place.

A contiguous cpu tensor lends its own array (zero copy; MPI writes straight into the tensor). Any other
tensor, an opencl one or a non-contiguous view, is copied to the host and copied back after the operation.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..autograd import no_grad
from ..dispatch.contract.host import c_contiguous
from ..creation import from_numpy
from ..tensor import Tensor


def host_array(t: Tensor) -> np.ndarray:
    """``t``'s values as a C-contiguous NumPy array: the tensor's own array when it can be."""
    data = t._data
    if t.device.type == "cpu" and isinstance(data, np.ndarray) and data.flags.c_contiguous \
            and data.flags.writeable:
        return data
    return c_contiguous(t._host())


def empty(shape: tuple[int, ...], like: np.ndarray) -> np.ndarray:
    """A fresh receive buffer of ``like``'s dtype."""
    return np.empty(shape, dtype=like.dtype)


def stack(arrays: list[np.ndarray]) -> np.ndarray:
    """Equal-shaped arrays laid out one after another (a send buffer for scatter)."""
    return np.stack(arrays)


def write_back(t: Tensor, array: np.ndarray) -> Callable[[], None]:
    """What makes ``array``'s new values ``t``'s, once the operation has filled it."""
    if array is t._data:
        def bump() -> None:
            t._version[0] += 1  # written in place: views and autograd see a modified tensor
        return bump
    return lambda: assign(t, array)


def assign(t: Tensor, array: np.ndarray) -> None:
    """Copy ``array``'s values into ``t`` (any device, any layout), as an in-place write."""
    data = t._data
    if t.device.type == "cpu" and isinstance(data, np.ndarray) and data.flags.writeable:
        np.copyto(data, array.reshape(data.shape))
        t._version[0] += 1
        return
    with no_grad():
        t.copy_(from_numpy(c_contiguous(array).reshape(tuple(t.shape))).to(t.device))
