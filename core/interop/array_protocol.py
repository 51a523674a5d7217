"""``Tensor.__array__``: NumPy's array protocol (NumPy 2, with ``copy``), as PyTorch's tensors answer it.

Host-memory tensors hand NumPy their own array, so ``np.asarray(t)`` shares memory; tensors elsewhere
arrive as host copies. Like PyTorch, a tensor that requires grad refuses.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor


def to_array(t: Tensor, dtype=None, copy: bool | None = None) -> np.ndarray:
    if t.requires_grad:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    array = t._host()  # the native array itself for host memory, else a fresh host copy
    copied = array is not t._data
    wanted = array.dtype if dtype is None else np.dtype(dtype)
    if copy is False and (copied or wanted != array.dtype):
        reason = f"a {t.device} tensor lives outside host memory" if copied else \
            f"converting {t.dtype.name} to {wanted} makes a new array"
        raise ValueError(f"__array__: copy=False, but {reason}; pass copy=None to allow a copy")
    if wanted != array.dtype:
        return array.astype(wanted)
    return array.copy() if copy and not copied else array
