"""The CPU's embedding lookup and its backward, ``embedding_dense_backward``.

The lookup is one ``np.take`` of rows, where the composite dispatches ``index`` a second time. The backward
adds each looked-up row's gradient into a zeroed table in one numba pass (``embedding_loops``); measured on
this machine at one thread, for the table's gradient of makemore's and the benchmark GPT's lookups:

    rows added into table      numba loop   np.add.at   bincount
    (32, 3) into (27, 16)         1.6 us       97 us      41 us
    (32, 3) into (27, 64)         1.7 us      160 us      52 us
    (64, 32) into (65, 48)         77 us     1620 us    1010 us

Half precision accumulates in float32 and is rounded once; without numba the composite runs. Self-contained:
the backend adds ``build()``'s kernels to its table.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import OutOfRangeError

from . import fusion
from .dtypes import LOW_PRECISION

_embedding_loops = fusion.imported_on_first_call("embedding_loops")


def _embedding(indices: np.ndarray, weight: np.ndarray, padding_idx=None, scale_grad_by_freq=False) -> np.ndarray:
    """The rows of ``weight`` at ``indices`` (checked against the table by the op): a new array."""
    return np.take(weight, indices, axis=0)


_embedding.for_storage_dtypes = lambda widened: _embedding  # copies rows: any stored dtype as it is


def _embedding_dense_backward(grad_output: np.ndarray, indices: np.ndarray, num_weights: int, padding_idx: int,
                              scale_grad_by_freq: bool) -> np.ndarray:
    width = grad_output.shape[-1]
    flat = np.ascontiguousarray(indices.reshape(-1))
    work = np.dtype(np.float32) if grad_output.dtype in LOW_PRECISION else grad_output.dtype
    rows = np.ascontiguousarray(grad_output.reshape(flat.size, width), dtype=work)
    out = np.zeros((num_weights, width), work)
    bad = _embedding_loops().scatter_rows(out, flat, rows, padding_idx, scale_grad_by_freq)
    if bad >= 0:
        raise OutOfRangeError(f"embedding_dense_backward: index {flat[bad]} is out of range for {num_weights} "
                              f"embeddings (indices of shape {indices.shape})")
    return out if work == grad_output.dtype else out.astype(grad_output.dtype)


def build() -> dict:
    """The kernels: the lookup always, its backward where numba is installed."""
    kernels = {"embedding": _embedding}
    if fusion.numba_available():
        kernels["embedding_dense_backward"] = _embedding_dense_backward
    return kernels
