"""The CPU's row kernels as numba loops over rows, where numba is installed: layer_norm and its backward,
softmax, log_softmax and their backward ops, and cross-entropy over class indices (its softmax and
log-sum-exp). Without numba, and for what the loops do not take (empty or non-float arrays, float64
where the loop needs an exp, a softmax over another dim than the last), the shared NumPy kernels run.

Chosen by measurement (benchmarks/row_kernels_choice.py, at the benchmark workloads' shapes, float32,
median ms per call, NumPy against numba, on the 2-core reference machine):

    layer_norm            (1024, 128) 0.21 vs 0.056    (2048, 48) 0.23 vs 0.083
    layer_norm_backward   (1024, 128) 0.51 vs 0.12     (2048, 48) 0.54 vs 0.19
    softmax               (64, 64, 64) 0.62 vs 0.30    (192, 32, 32) 0.68 vs 0.28
    log_softmax           (64, 64, 64) 0.61 vs 0.32    (192, 32, 32) 0.68 vs 0.33
    softmax_backward      (64, 64, 64) 0.24 vs 0.050   (192, 32, 32) 0.24 vs 0.043
    log_softmax_backward  (64, 64, 64) 0.32 vs 0.15    (192, 32, 32) 0.30 vs 0.11
    cross_entropy_indices (2048, 65) 0.28 vs 0.19 (backward 0.37 vs 0.23); (64, 10) 0.019 vs 0.014

They run on one thread: spreading the rows over numba's pool (``parallel=True``, OpenMP layer) cut
layer_norm_backward alone by a third (0.18 -> 0.12 ms at (2048, 48)), but inside a training step its
threads and OpenBLAS's fought over the two cores: the GPT step went from 27 to 144 ms, the encoder's
from 31 to 93 (layer_norm, its backward and softmax_backward parallel, the rest as here).

The loops that exponentiate (``softmax_loops``) call ember.dispatch.fast_exp's float32 exp: with numba's
own ``np.exp`` (libm, one element at a time) the softmax loop lost to NumPy (0.5-0.8x), so they serve
float32 (and half types, widened) only, and float64 keeps NumPy. The others (``row_loops``) serve float32
and float64. The loops take C-contiguous (rows, n) arrays; half-precision inputs compute in float32 and
are rounded once at the end, as the NumPy kernels do. numba is imported on the first call, so that
importing ember stays cheap, and the loops compile once per machine (numba's on-disk cache): a fresh
process's first calls of all of them took 1.4 s compiling and 0.03 s loading from that cache (numba
already imported).
"""
from __future__ import annotations

import math

import numpy as np

from ember.backends.arraykernels import losses as class_losses

from . import fusion, softmax_loops
from .dtypes import LOW_PRECISION
from .library import NUMPY

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_FLOAT32 = (np.dtype(np.float32),)


_row_loops = fusion.imported_on_first_call("row_loops")


def _rows(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` as a C-contiguous (rows, n) array of float32 or float64 (half types widened)."""
    if a.dtype in LOW_PRECISION:
        a = a.astype(np.float32)
    return np.ascontiguousarray(a.reshape(-1, n))


def _vector(v: np.ndarray | None, n: int, dtype: np.dtype) -> np.ndarray | None:
    return None if v is None else np.ascontiguousarray(v.reshape(n), dtype=dtype)


def _loop_takes(x: np.ndarray) -> bool:
    """Whether the row loops take ``x``: a non-empty floating array (half types are widened)."""
    return x.size > 0 and (x.dtype in _FLOATS or x.dtype in LOW_PRECISION)


def build(numpy_kernels: dict) -> dict:
    """The row kernels by op name, each falling back to ``numpy_kernels``' for what its loop does not take;
    {} without numba."""
    if not fusion.numba_available():
        return {}
    return {**_layer_norms(numpy_kernels), **_softmaxes(numpy_kernels), **_cross_entropy()}


def _layer_norms(numpy_kernels: dict) -> dict:
    numpy_layer_norm, numpy_backward = numpy_kernels["layer_norm"], numpy_kernels["layer_norm_backward"]

    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        if not _loop_takes(x):
            return numpy_layer_norm(x, normalized_shape, weight, bias, eps)
        n = math.prod(normalized_shape)
        rows = _rows(x, n)
        out = np.empty_like(rows)
        _row_loops().layer_norm(rows, _vector(weight, n, rows.dtype), _vector(bias, n, rows.dtype), float(eps), out)
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    def layer_norm_backward(grad_output, x, normalized_shape, weight=None, eps=1e-5):
        if not _loop_takes(x):
            return numpy_backward(grad_output, x, normalized_shape, weight, eps)
        n = math.prod(normalized_shape)
        rows = _rows(x, n)
        grad_input = np.empty_like(rows)
        sums = np.zeros((2, n))  # grad_weight's and grad_bias's accumulators, in float64
        _row_loops().layer_norm_backward(rows, _rows(grad_output, n), _vector(weight, n, rows.dtype), float(eps),
                                         grad_input, sums[0], sums[1])
        normalized = tuple(normalized_shape)
        return (grad_input.reshape(x.shape).astype(x.dtype, copy=False),
                sums[0].reshape(normalized).astype(rows.dtype), sums[1].reshape(normalized).astype(rows.dtype))

    return {"layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward}


def _softmaxes(numpy_kernels: dict) -> dict:
    def exp_loop(name: str):
        return lambda: getattr(softmax_loops.load(), name)

    def over_rows(name: str, loop_of, dtypes: tuple, count: int):
        return _along_last_dim(numpy_kernels[name], loop_of, dtypes, count)

    return {"softmax": over_rows("softmax", exp_loop("softmax"), _FLOAT32, 1),
            "log_softmax": over_rows("log_softmax", exp_loop("log_softmax"), _FLOAT32, 1),
            "softmax_backward": over_rows("softmax_backward", lambda: _row_loops().softmax_backward, _FLOATS, 2),
            "log_softmax_backward": over_rows("log_softmax_backward", exp_loop("log_softmax_backward"),
                                              _FLOAT32, 2)}


def _cross_entropy() -> dict:
    """The shared cross-entropy kernels with the float32 softmax and log-sum-exp of (positions, classes) rows
    in loops; the rest of each stays the shared kernel's whole-array code."""
    def softmax_rows(rows):
        out = np.empty(rows.shape, np.float32)
        softmax_loops.load().softmax(np.ascontiguousarray(rows), out)
        return out

    def logsumexp_rows(rows):
        out = np.empty(rows.shape[0], np.float32)
        softmax_loops.load().logsumexp(np.ascontiguousarray(rows), out)
        return out

    kernels = class_losses.build(NUMPY, softmax_rows=softmax_rows, logsumexp_rows=logsumexp_rows)
    return {name: kernels[name] for name in ("cross_entropy_indices", "cross_entropy_indices_backward")}


def _along_last_dim(numpy_kernel, loop_of, dtypes: tuple, count: int):
    """A kernel ``(*arrays, dim, ...)`` taking ``count`` arrays, that runs ``loop_of()(*rows, out)`` over the
    rows of the last dim for non-empty arrays of ``dtypes`` (half types widened to float32), and
    ``numpy_kernel`` for the rest (other dims: their rows are strided)."""
    def kernel(*args):
        arrays, dim = args[:count], args[count]
        last = arrays[-1]
        wide = np.dtype(np.float32) if last.dtype in LOW_PRECISION else last.dtype
        if last.ndim == 0 or last.size == 0 or dim != last.ndim - 1 or wide not in dtypes:
            return numpy_kernel(*args)
        n = last.shape[-1]
        rows = [_rows(a, n) for a in arrays]
        out = np.empty_like(rows[-1])
        loop_of()(*rows, out)
        return out.reshape(last.shape).astype(last.dtype, copy=False)
    return kernel
