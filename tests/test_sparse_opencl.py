"""The OpenCL backend's CSR SpMM kernel on a real device (PoCL in CI): products and both gradients against
NumPy, every operand kept on the device, and the CPU fallback for a backend without sparse kernels.
Skipped, with the reason, where no OpenCL device works."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

STATUS = ember.backends.available().get("opencl", "unavailable: not registered")
pytestmark = pytest.mark.skipif(STATUS != "available", reason=f"opencl {STATUS}")
RNG = np.random.default_rng(3)


def graph(rows, cols, nnz):
    r, c = RNG.integers(0, rows, nnz), RNG.integers(0, cols, nnz)
    v = RNG.standard_normal(nnz).astype(np.float32)
    dense = np.zeros((rows, cols), np.float32)
    np.add.at(dense, (r, c), v)
    return np.stack([r, c]), v, dense


@pytest.mark.parametrize("rows, cols, k, nnz", [(7, 5, 3, 12), (300, 200, 67, 2000), (64, 64, 64, 0)])
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_spmm_and_gradients_on_opencl(rows, cols, k, nnz, layout):
    indices, values, dense = graph(rows, cols, nnz)
    a = ember.sparse_coo_tensor(indices, values, (rows, cols), device="opencl")
    if layout == "csr":
        a = a.to_sparse_csr()
    a = a.requires_grad_()
    b_host = RNG.standard_normal((cols, k)).astype(np.float32)
    b = ember.tensor(b_host, device="opencl", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no silent trip through the host
        y = ember.sparse.mm(a, b)
        assert y.device.type == "opencl"
        np.testing.assert_allclose(y.detach().cpu().numpy(), dense @ b_host, rtol=1e-4, atol=1e-4)
        weights = RNG.standard_normal((rows, k)).astype(np.float32)
        (y * ember.tensor(weights, device="opencl")).sum().backward()
    np.testing.assert_allclose(b.grad.cpu().numpy(), dense.T @ weights, rtol=1e-4, atol=1e-4)
    g = a.grad.to_dense().cpu().numpy()
    mask = a.detach().to_dense().cpu().numpy() != 0
    np.testing.assert_allclose(g[mask], (weights @ b_host.T)[mask], rtol=1e-4, atol=1e-4)


def test_opencl_kernel_reads_offset_operands():
    """Operands that are contiguous views at an offset into their buffer."""
    indices, values, dense = graph(6, 4, 10)
    big = ember.tensor(np.concatenate([np.zeros(5, np.float32), values]), device="opencl")
    a = ember.sparse_coo_tensor(indices, big[5:], (6, 4))
    b_host = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    b = ember.tensor(b_host, device="opencl")[2]
    np.testing.assert_allclose((a @ b).cpu().numpy(), dense @ b_host[2], rtol=1e-5, atol=1e-5)


def test_backend_without_the_hook_falls_back_to_the_cpu(monkeypatch):
    from ember.backends.opencl.backend import OpenCLBackend
    from ember.sparse import kernels
    monkeypatch.setattr(OpenCLBackend, "sparse_kernels", lambda self: None)
    monkeypatch.setattr(kernels, "_warned", set())
    indices, values, dense = graph(9, 8, 20)
    a = ember.sparse_coo_tensor(indices, values, (9, 8), device="opencl")
    b_host = RNG.standard_normal((8, 2)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match="opencl has no sparse kernels"):
        y = a @ ember.tensor(b_host, device="opencl")
    assert y.device.type == "opencl"
    np.testing.assert_allclose(y.cpu().numpy(), dense @ b_host, rtol=1e-5, atol=1e-5)
