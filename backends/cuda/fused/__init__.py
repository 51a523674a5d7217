"""CUDA-only kernels that replace shared ones where a chain of CuPy calls would launch many kernels.

Each module's ``build`` returns overrides by op name: the composites the CPU backend also overrides
(softmax, log_softmax, cross-entropy forward and backward, layer_norm, gelu, max pooling, convolution,
the Adam/AdamW step).
Kernels are compiled by CuPy on first use, never at import.
"""
from __future__ import annotations

from . import conv, cross_entropy, gelu, layer_norm, optim, pooling, softmax


def overrides(cupy, lib, shared: dict) -> dict:
    table: dict = {}
    for module in (softmax, cross_entropy, layer_norm, gelu, optim):
        table.update(module.build(cupy, lib))
    for module in (pooling, conv):  # these fall back to the shared kernels for what they do not cover
        table.update(module.build(cupy, shared))
    return table
