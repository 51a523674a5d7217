"""The CUDA kernel table: the shared NumPy-compatible kernels built for CuPy, then the fused CUDA ones."""
from __future__ import annotations

from ember.backends.arraykernels import ArrayLib, build_kernels
from ember.dispatch import OPS

from . import fused
from .guard import on_operand_device


def build(cupy, lib: ArrayLib, device_count: int) -> dict:
    shared = build_kernels(lib)
    kernels = dict(shared)
    kernels.update(fused.overrides(cupy, lib, shared))
    unknown = kernels.keys() - OPS.keys()
    assert not unknown, f"kernels for ops the schema does not declare: {unknown}"
    if device_count > 1:
        kernels = on_operand_device(cupy, kernels)
    return kernels
