"""Values handed to the writer (Ember tensors on any device, NumPy arrays, numbers) as host arrays."""
from __future__ import annotations

import numbers

import numpy as np

from ...tensor import Tensor


def to_numpy(value, where: str) -> np.ndarray:
    """``value`` as a NumPy array on the host; ``where`` names the caller in the error message."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (numbers.Number, np.generic)):
        return np.asarray(value)
    raise TypeError(f"{where}: expected an ember Tensor, a NumPy array or a number, got {type(value).__name__}")


def to_float(value, where: str) -> float:
    """A one-element value as a Python float (``add_scalar``, hparams)."""
    array = to_numpy(value, where)
    if array.size != 1:
        raise ValueError(f"{where}: expected one value, got an array of shape {tuple(array.shape)}")
    return float(array.reshape(()).astype(np.float64))
