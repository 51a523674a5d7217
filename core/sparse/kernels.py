"""The one native sparse kernel, CSR @ dense, through the device's ``sparse_kernels()`` hook.

A backend without the hook (or without its dtype) computes on the CPU backend's hook instead: operands
copied to the host, the product computed there, the result copied back, with a warning the first time per
device type, as the dispatcher's CPU fallback warns.
"""
from __future__ import annotations

import warnings

from ..dispatch.contract import registry
from ..dispatch.execution import host_reads
from ..dispatch.schema.dtypes import int64
from ..tensor import Tensor, wrap

_warned: set[str] = set()


def _host_fallback(device_type: str, why: str):
    if device_type not in _warned:
        _warned.add(device_type)
        warnings.warn(f"ember.sparse: {device_type} {why}; sparse products run on the CPU (SciPy) with copies "
                      f"to and from the host", RuntimeWarning, stacklevel=4)
    kernels = registry.get_backend("cpu").sparse_kernels()
    if kernels is None:
        raise RuntimeError("ember.sparse: the cpu backend has no sparse kernels (is SciPy installed?)")
    return kernels


def csr_matmul(crow: Tensor, col: Tensor, values: Tensor, dense: Tensor, rows: int) -> Tensor:
    """``(rows, k)`` = CSR(crow, col, values) @ dense, on the operands' device. Inputs: int64 index tensors,
    values and dense of one dtype, all on one device (``products`` checks)."""
    device = values.device
    backend = registry.get_backend(device.type)
    operands = [t.contiguous() for t in (crow.to(int64), col.to(int64), values, dense)]
    natives = [t._data for t in operands]
    kernels = backend.sparse_kernels()
    if kernels is not None and kernels.supports(values.dtype.name):
        return wrap(kernels.csr_matmul(*natives, rows), values.dtype, device)
    why = "has no sparse kernels" if kernels is None else f"has no sparse {values.dtype.name} kernels"
    cpu = _host_fallback(device.type, why)
    host = [host_reads.read(n, device) for n in natives]
    product = cpu.csr_matmul(*host, rows)
    return wrap(backend.from_numpy(product, values.dtype, device.index), values.dtype, device)
