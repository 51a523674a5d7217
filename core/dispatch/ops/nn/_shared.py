"""Private helpers the nn modules share: the log-softmax reference (softmax, losses), the refusal of a
differentiable loss weight (the loss modules) and pooling's output sizes and adaptive sizes (pooling,
max_pooling)."""
from __future__ import annotations

import math

import numpy as np

from ...execution import links
from ...schema.errors import ArgumentError, EmberError, describe
from ...schema.meta import shape
from .spatial import int_tuple


def _log_softmax_reference(x, dim, dtype=None):
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return np.zeros_like(x)
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


def _refuse_weight_grad(op_name: str, weight, argument: str = "weight") -> None:
    """PyTorch's rule: the weights of these losses are not differentiable, so say so at once."""
    if getattr(weight, "requires_grad", False) and links.recorder.state.enabled:
        raise EmberError(f"{op_name}: not differentiable with respect to argument '{argument}'; this input cannot "
                         f"have requires_grad=True ({describe(weight)}); pass {argument}.detach()")


def _pool_output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's rule: in ceil mode the last window must start inside the input or the left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _lowest(dtype) -> float:
    """The padding value max pooling can never pick: -inf, or an integer dtype's minimum."""
    if dtype.is_floating_point:
        return -math.inf
    return -(2 ** (8 * dtype.itemsize - 1)) if dtype.is_signed else 0


def _adaptive_normalize(n: int):
    """output_size -> n non-negative ints: an int repeats, None keeps that dim's input size."""
    def normalize(op, args):
        x, output_size = args["input"], args["output_size"]
        sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,)
        if len(sizes) == 1:
            sizes = tuple(sizes) * n
        if len(sizes) != n:
            raise ArgumentError(f"{op.name}: output_size must be an int or {n} values, got {output_size!r}")
        spatial = shape(x)[-n:]
        resolved = []
        for i, s in enumerate(sizes):
            if s is None:
                s = spatial[i] if len(spatial) == n else 0
            s = int_tuple(op.name, "output_size", s, 1)[0]
            if s < 0:
                raise ArgumentError(f"{op.name}: output_size must be non-negative, got {output_size!r}")
            resolved.append(s)
        args["output_size"] = tuple(resolved)
    return normalize
