"""The NCCL engine's host logic for reductions (which buffer NCCL reduces, of which type, and how the result lands),
run with NumPy standing in for CuPy: CI has no GPU, so this is where complex and AVG handling is checked."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from ember.distributed.engines.nccl import NCCLEngine
from ember.distributed.reduce_op import RedOpType


class _HostEngine:
    """An NCCLEngine without a GPU: NumPy for CuPy, names for NCCL's type and op codes."""
    _cp = np
    _types = {name: name for name in ("uint8", "int32", "int64", "float16", "float32", "float64")}
    _ops = {op: op.name for op in RedOpType}
    device = contextlib.nullcontext()
    size = 4
    _wire = NCCLEngine._wire
    _reduction = NCCLEngine._reduction


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op", [RedOpType.SUM, RedOpType.AVG])
def test_complex_tensors_reduce_as_their_parts(dtype, op):
    array = (np.arange(6) + 1j * np.arange(6, 12)).astype(dtype).reshape(2, 3)
    buf, nccl_type, op_code, finish = _HostEngine()._reduction(array, op)
    assert nccl_type == ("float32" if dtype == np.complex64 else "float64") and op_code == "SUM"
    assert buf.size == 2 * array.size and np.shares_memory(buf, array)
    buf *= 4  # what a SUM over four ranks holding the same values leaves in the buffer
    if finish is not None:
        finish()
    expected = (np.arange(6) + 1j * np.arange(6, 12)).reshape(2, 3) * (1 if op is RedOpType.AVG else 4)
    np.testing.assert_array_equal(array, expected.astype(dtype))
