"""Overrides of the class-index losses, cross-entropy and nll_loss, and of their backward ops.

These run on every training step, and their core definitions take about a dozen ops each way. Here the
scores become a (positions, classes) matrix, and the loss or its gradient comes out of a few whole-array
calls. Half-precision inputs compute in float32; the forward losses round where PyTorch's steps round in the
input's dtype (log_softmax's output, each loss term, the sums), so that they overflow where PyTorch's do,
and the gradients round once.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .library import ArrayLib

_FEW_CLASSES = 64


def build(lib: ArrayLib, *, softmax_rows=None, logsumexp_rows=None) -> dict:
    """The loss kernels for ``lib``. A backend with faster row loops passes them in for non-empty float32
    (positions, classes) matrices: ``softmax_rows(rows)``, the softmax of each row, and ``logsumexp_rows(rows)``,
    each row's log(sum(exp(row))) (1-D); other rows, and every row without them, take whole-array calls."""
    xp = lib.xp
    low, quiet = lib.low_precision, lib.quiet
    ndarray = xp.ndarray

    def _in_float32(kernel, rounding: bool = False):
        """Widen float16/bfloat16 arrays to float32, round the result back to the computation dtype; keep
        the library quiet about the 0/0 of a mean over ignored targets (NaN, as in PyTorch). With ``rounding``
        the kernel takes one more argument: a function that rounds a float32 array to the values the
        computation dtype holds (nothing for float32 and float64), for the roundings on the way."""
        def floating(a) -> bool:
            return isinstance(a, ndarray) and (a.dtype.kind == "f" or a.dtype in low)

        @functools.wraps(kernel)
        def wrapper(*args):
            dtype = next(a.dtype for a in args if floating(a))
            if dtype in low:
                args = [a.astype(np.float32) if floating(a) else a for a in args]
            if rounding:
                args = (*args, _rounding_to(dtype))
            with quiet():
                return xp.asarray(kernel(*args)).astype(dtype, copy=False)
        if rounding:  # the dispatcher passes the op's parameters; the rounding function is this wrapper's
            signature = inspect.signature(kernel)
            wrapper.__signature__ = signature.replace(parameters=list(signature.parameters.values())[:-1])
        return wrapper

    def _exact(a):
        return a

    def _rounding_to(dtype):
        """float32 arrays rounded to the values ``dtype`` holds (as float32); other dtypes' arrays as they are."""
        if dtype not in low:
            return _exact
        return lambda a: xp.asarray(a).astype(dtype).astype(np.float32)

    def _rounding(kernel):
        return _in_float32(kernel, rounding=True)

    def _targets(target, weight, ignore_index, dtype):
        """(counted, safe, weights): the flat targets that count, with ignored ones pointed at class 0,
        and each target's class weight (0 where ignored)."""
        flat = target.reshape(-1)
        counted = flat != ignore_index
        safe = xp.where(counted, flat, 0)
        weights = counted.astype(dtype) if weight is None else xp.where(counted, weight[safe], 0).astype(dtype)
        return counted, safe, weights

    def _reduced(losses, weights, target, reduction, rounded):
        """The per-position losses reduced; the mean divides by the counted targets' weights (0/0 is NaN).
        Both sums are rounded before the division, as PyTorch's half-precision sums are."""
        if reduction == "none":
            return losses.reshape(target.shape)
        total = rounded(losses.sum())
        return total if reduction == "sum" else total / rounded(weights.sum())

    def _scale(grad_output, target, counted, weights, reduction):
        """d loss / d (each position's term): the incoming gradient per position, over the weight total for
        'mean', zero where ignored."""
        scale = xp.broadcast_to(grad_output, target.shape).reshape(-1)
        if reduction == "mean":
            scale = scale / weights.sum()
        return xp.where(counted, scale, 0).astype(weights.dtype)

    def _row_max(rows):
        """Each row's max, the shift that keeps exp from overflowing. NumPy reduces a short contiguous axis
        slowly (7 us for 128 rows of 10 on the reference machine), so few classes reduce down a transposed copy."""
        if rows.shape[1] == 0:
            return xp.full(rows.shape[:1], -np.inf, rows.dtype)
        if rows.shape[1] <= _FEW_CLASSES:
            return xp.ascontiguousarray(rows.T).max(axis=0)
        return rows.max(axis=1)

    def _shifted_exps(rows):
        """(exp(rows - shift), shift) with each row's max as its shift: the terms of softmax's sums."""
        shift = _row_max(rows)
        return xp.exp(rows - shift[:, None]), shift

    def _softmax_rows(rows):
        exps, _ = _shifted_exps(rows)
        exps /= exps.sum(axis=1, keepdims=True)
        return exps

    def _logsumexp_rows(rows):
        exps, shift = _shifted_exps(rows)
        return shift + xp.log(exps.sum(axis=1))

    def _float32_rows_by(loop, default):
        if loop is None:
            return default
        return lambda rows: loop(rows) if rows.dtype == np.float32 and rows.size else default(rows)

    softmax_of = _float32_rows_by(softmax_rows, _softmax_rows)
    logsumexp_of = _float32_rows_by(logsumexp_rows, _logsumexp_rows)

    def _smoothing_losses(rows, normalizer, weight, rounded):
        """-sum_c w[c] * log_softmax(x)[c] per row. In float32 and float64 from the row sums, never forming
        log_softmax; in half precision from log_softmax rounded element by element, as PyTorch sums it."""
        if rounded is _exact:
            total_weight = rows.shape[1] if weight is None else weight.sum()
            return normalizer * total_weight - (rows.sum(axis=1) if weight is None else rows @ weight)
        log_probs = rounded(rows - normalizer[:, None])
        return -rounded((log_probs if weight is None else rounded(log_probs * weight)).sum(axis=1))

    @_rounding
    def _cross_entropy_indices(x, target, weight, ignore_index, label_smoothing, reduction, rounded):
        """nll_loss of log_softmax(x), then mixed with eps / C of the smoothing loss, each reduced on its own:
        PyTorch's steps. Only the target column of log_softmax is formed, and in float32 and float64 its row
        sums."""
        rows = class_rows(x)
        count, classes = rows.shape
        counted, safe, weights = _targets(target, weight, ignore_index, rows.dtype)
        normalizer = logsumexp_of(rows)  # what log_softmax subtracts
        picked = rounded(rows[xp.arange(count), safe] - normalizer)  # log_softmax at the targets
        loss = _reduced(xp.where(counted, rounded(-picked * weights), 0), weights, target, reduction, rounded)
        if label_smoothing == 0:
            return loss
        smooth = xp.where(counted, _smoothing_losses(rows, normalizer, weight, rounded), 0)
        smooth = rounded(_reduced(smooth, weights, target, reduction, rounded))
        return rounded((1 - label_smoothing) * rounded(loss)) + rounded((label_smoothing / classes) * smooth)

    @_in_float32
    def _cross_entropy_indices_backward(grad_output, x, target, weight, ignore_index, label_smoothing, reduction):
        """scale * (softmax * mass - q): q puts (1 - eps) * w[t] on the target, eps / C * w[c] on each class c."""
        rows = class_rows(x)
        count, classes = rows.shape
        counted, safe, weights = _targets(target, weight, ignore_index, rows.dtype)
        scale = _scale(grad_output, target, counted, weights, reduction)
        smooth = label_smoothing / classes
        total_weight = classes if weight is None else weight.sum()
        mass = (1 - label_smoothing) * weights + smooth * total_weight
        grad = softmax_of(rows)
        grad *= (scale * mass)[:, None]  # softmax * scale * mass, in place
        grad[xp.arange(count), safe] -= (1 - label_smoothing) * scale * weights
        if label_smoothing > 0:
            grad -= smooth * scale[:, None] * (1 if weight is None else weight)
        return class_unrows(grad, x)

    @_rounding
    def _nll_loss(x, target, weight, ignore_index, reduction, rounded):
        rows = class_rows(x)
        counted, safe, weights = _targets(target, weight, ignore_index, rows.dtype)
        losses = xp.where(counted, rounded(-rows[xp.arange(rows.shape[0]), safe] * weights), 0)
        return _reduced(losses, weights, target, reduction, rounded)

    @_in_float32
    def _nll_loss_backward(grad_output, x, target, weight, ignore_index, reduction):
        """-scale * w[t] at each position's target class."""
        rows = class_rows(x)
        counted, safe, weights = _targets(target, weight, ignore_index, rows.dtype)
        grad = xp.zeros(rows.shape, rows.dtype)
        grad[xp.arange(rows.shape[0]), safe] = -_scale(grad_output, target, counted, weights, reduction) * weights
        return class_unrows(grad, x)

    def class_rows(x):
        return rows_of(xp, x)

    def class_unrows(grad, x):
        return unrows_of(xp, grad, x)

    return {
        "nll_loss": _nll_loss,
        "nll_loss_backward": _nll_loss_backward,
        "cross_entropy_indices": _cross_entropy_indices,
        "cross_entropy_indices_backward": _cross_entropy_indices_backward,
    }


def rows_of(xp, x):
    """The logits as (positions, classes), classes last (a copy only for K-dimensional inputs)."""
    if x.ndim <= 2:
        return x.reshape(-1, x.shape[-1])
    return xp.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def unrows_of(xp, grad, x):
    """(positions, classes) back to the layout of the logits x."""
    if x.ndim <= 2:
        return grad.reshape(x.shape)
    moved = (x.shape[0],) + x.shape[2:] + (x.shape[1],)
    return xp.ascontiguousarray(xp.moveaxis(grad.reshape(moved), -1, 1))
