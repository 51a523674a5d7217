"""CUDA-only kernels that replace shared ones where a chain of CuPy calls would launch many kernels, or
where CuPy's own kernel differs from NumPy and PyTorch.

Each module's ``build`` returns overrides by op name: the composites the CPU backend also overrides
(softmax, log_softmax, cross-entropy forward and backward, layer_norm, gelu, max pooling, the Adam/AdamW
step), and float floor division and remainder (CuPy's differ at infinities).
Each module with CUDA C declares it in ``SOURCES`` (``kernel_sources.py`` records), which ``build`` makes
its kernels from and ``sources()`` lists for the NVRTC test. Kernels are compiled by CuPy on first use,
never at import.
"""
from __future__ import annotations

from ..cudnn import overrides as cudnn_overrides
from . import cross_entropy, floor_division, gelu, layer_norm, multi_tensor, optim, pooling, softmax

#: every fused module (each declares CUDA C)
_WITH_SOURCES = (softmax, cross_entropy, layer_norm, gelu, optim, multi_tensor, pooling, floor_division)


def overrides(cupy, lib, shared: dict) -> dict:
    table: dict = {}
    for module in (softmax, cross_entropy, layer_norm, gelu, optim, multi_tensor):
        table.update(module.build(cupy, lib))
    table.update(pooling.build(cupy, shared))  # falls back to the shared kernels for what it does not cover
    table.update(floor_division.build(cupy, shared))  # floats only: integers keep the shared kernels
    table.update(cudnn_overrides(cupy, lib, shared))  # convolutions through cuDNN where it is installed
    return table


def sources() -> tuple:
    """Every kernel record of the fused modules (``kernel_sources.py``), as their ``build`` uses them."""
    return tuple(source for module in _WITH_SOURCES for source in module.SOURCES)
