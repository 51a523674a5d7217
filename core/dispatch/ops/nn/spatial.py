"""The attribute helpers shared by the spatial ops (padding, convolution, pooling): PyTorch's "int or tuple"
arguments, unbatched inputs, and ONNX's batch-dim requirement.
"""
from __future__ import annotations

import numpy as np

from ..namespace import F
from ...schema.errors import ArgumentError


# -- attribute helpers ------------------------------------------------------------------------------

def int_tuple(op_name: str, name: str, value, n: int) -> tuple:
    """An int or a list of 1 or n ints -> n ints, as PyTorch accepts ``stride=2`` or ``stride=(2, 1)``."""
    if isinstance(value, (list, tuple)):
        value = tuple(value)
    else:
        value = (value,)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{op_name}(): argument '{name}' must be an int or a tuple of ints, got {value!r}")
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        value *= n
    if len(value) != n:
        raise ArgumentError(f"{op_name}: expected {name} to be a single integer or a list of {n} integers, "
                            f"got {name}={list(value)}")
    return value


def at_least(op_name: str, name: str, values: tuple, low: int) -> tuple:
    if any(v < low for v in values):
        kind = "positive" if low == 1 else "non-negative"
        raise ArgumentError(f"{op_name}: {name} must be {kind}, got {name}={values}")
    return values


def expand_attr(value, n: int) -> tuple:
    """The references' reading of an "int or tuple" attribute (they get the caller's raw values)."""
    value = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return value * n if len(value) == 1 else value


def onnx_batched(g, input, spatial: int, build):
    """ONNX's convolution and pooling nodes need a batch dim: an unbatched input gets one around ``build``."""
    if len(g.shape_of(input)) == spatial + 2:
        return build(input)
    return g.squeeze(build(g.unsqueeze(input, [0])), [0])


def with_batch(x, n: int):
    """(input with a batch dim, whether it had one): unbatched (C, *spatial) input gets a batch of 1."""
    return (x, True) if x.ndim == n + 2 else (F.unsqueeze(x, 0), False)


def without_batch(out, batched: bool):
    return out if batched else F.squeeze(out, 0)


def sliding_windows(x, kernel: tuple, stride: tuple, dilation: tuple):
    """(N, C, *spatial) -> view (N, C, *out, *kernel) of the dilated sliding windows (any number of dims)."""
    for axis, (k, s, d) in enumerate(zip(kernel, stride, dilation), start=2):
        x = F.unfold(x, axis, d * (k - 1) + 1, s)
    for axis, d in enumerate(dilation, start=2 + len(kernel)):
        if d > 1:
            x = F.slice(x, axis, None, None, d)
    return x


def flat_padding(pairs) -> tuple:
    """((before, after), ...) per spatial dim, first dim first -> F.pad's flat list, last dim first."""
    return tuple(v for pair in reversed(tuple(pairs)) for v in pair)
