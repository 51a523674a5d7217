"""Host arrays as backends copy them to a device: C-contiguous, with their shape kept exactly.

``np.ascontiguousarray`` returns at least one dimension, so a 0-d array handed to it comes back as shape
(1,): on the way to a device that turned every 0-d tensor (losses, reductions to a scalar, BatchNorm's
``num_batches_tracked``) into a 1-d one. Every backend and loader that makes a host array contiguous before
a copy goes through :func:`c_contiguous` instead.
"""
from __future__ import annotations

import numpy as np


def c_contiguous(array, dtype=None) -> np.ndarray:
    """``array`` as a C-contiguous NumPy array of the same shape (0-d stays 0-d); no copy when it already is one."""
    return np.asarray(array, dtype=dtype, order="C")


__all__ = ["c_contiguous"]
