"""Overrides of the layer composites that declare derivatives: linear, layer_norm and group_norm.

One fused kernel each instead of a chain of dispatched ops, which is what the small matrices of
transformer blocks pay for. Their backward stays the schema's derivative, written in Ember ops.
Half-precision inputs compute in float32 and are rounded once at the end, as the composites do.
"""
from __future__ import annotations

import numpy as np

from .library import ArrayLib
from .linalg import stacked_times_matrix


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    low, widen_matmul = lib.low_precision, lib.widen_for_matmul

    def _widen(*arrays):
        return [a.astype(np.float32) if a is not None and a.dtype in low else a for a in arrays]

    def _narrow(out, dtype):
        return out.astype(dtype) if out.dtype != dtype else out

    def _linear(x, weight, bias=None):
        dtype = x.dtype
        if dtype in widen_matmul:
            x, weight, bias = _widen(x, weight, bias)
        out = stacked_times_matrix(xp, x, weight.T)
        if bias is not None:
            out += bias
        return _narrow(xp.asarray(out), dtype)

    def _standardize(x, axes: tuple, eps: float):
        mean = x.mean(axes, keepdims=True)
        centered = x - mean
        var = xp.mean(xp.square(centered), axes, keepdims=True)
        centered *= 1.0 / xp.sqrt(var + eps)
        return centered

    def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        if x.size == 0:
            return x.copy()
        xw, ww, bw = _widen(x, weight, bias)
        out = _standardize(xw, tuple(range(x.ndim - len(normalized_shape), x.ndim)), eps)
        if weight is not None:
            out *= ww
        if bias is not None:
            out += bw
        return _narrow(out, x.dtype)

    def _group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
        if x.size == 0:
            return x.copy()
        xw, ww, bw = _widen(x, weight, bias)
        out = _standardize(xw.reshape(x.shape[0], num_groups, -1), (2,), eps).reshape(x.shape)
        channel = (-1,) + (1,) * (x.ndim - 2)
        if weight is not None:
            out *= ww.reshape(channel)
        if bias is not None:
            out += bw.reshape(channel)
        return _narrow(out, x.dtype)

    return {"linear": _linear, "layer_norm": _layer_norm, "group_norm": _group_norm}
