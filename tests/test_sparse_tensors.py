"""ember.sparse without PyTorch: construction and its checks, layout facts, conversions, and the clear error a
dense op raises for a sparse operand. Values are checked against NumPy/SciPy references."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ember
from ember.sparse import SparseTensor, UnsupportedLayoutError

INDICES = [[0, 1, 1, 3], [2, 0, 2, 1]]
VALUES = [3.0, 4.0, 5.0, -1.0]


def coo(**kwargs):
    return ember.sparse_coo_tensor(INDICES, VALUES, (4, 3), **kwargs)


def reference() -> np.ndarray:
    return sp.coo_matrix((VALUES, INDICES), shape=(4, 3)).toarray().astype(np.float32)


def test_coo_facts_and_dense_values():
    a = coo()
    assert isinstance(a, ember.Tensor) and isinstance(a, SparseTensor)
    assert a.layout is ember.sparse_coo and a.is_sparse and not a.is_sparse_csr
    assert a.shape == (4, 3) and a.dtype is ember.float32 and a.device.type == "cpu"
    assert (a.sparse_dim(), a.dense_dim(), a._nnz(), a.is_coalesced()) == (2, 0, 4, False)
    np.testing.assert_array_equal(a.to_dense().numpy(), reference())
    c = a.coalesce()
    assert c.is_coalesced() and c.indices().tolist() == INDICES and c.values().tolist() == VALUES


def test_dense_tensor_answers_the_sparse_api():
    x = ember.tensor(reference())
    assert x.layout is ember.strided and not x.is_sparse and not x.is_sparse_csr
    assert (x.sparse_dim(), x.dense_dim()) == (0, 2)
    assert x.to_dense() is x
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout but got Strided"):
        x.indices()
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed"):
        x.crow_indices()


def test_duplicates_sum_and_coalesce_keeps_gradients_to_the_values():
    v = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = ember.sparse_coo_tensor([[1, 0, 1], [0, 0, 0]], v, (2, 1))
    c = a.coalesce()
    assert c.indices().tolist() == [[0, 1], [0, 0]] and c.values().tolist() == [2.0, 4.0]
    (c.values() * ember.tensor([10.0, 100.0])).sum().backward()
    assert v.grad.tolist() == [100.0, 10.0, 100.0]


def test_csr_round_trips_through_coo_and_dense():
    a = coo()
    csr = a.to_sparse_csr()
    expected = sp.csr_matrix(reference())
    assert csr.layout is ember.sparse_csr and csr.is_sparse_csr and not csr.is_sparse
    assert csr.crow_indices().tolist() == expected.indptr.tolist()
    assert csr.col_indices().tolist() == expected.indices.tolist()
    np.testing.assert_array_equal(csr.values().numpy(), expected.data)
    np.testing.assert_array_equal(csr.to_dense().numpy(), reference())
    back = csr.to_sparse()
    assert back.layout is ember.sparse_coo and back.is_coalesced()
    np.testing.assert_array_equal(back.to_dense().numpy(), reference())
    direct = ember.sparse_csr_tensor(expected.indptr, expected.indices, expected.data.astype(np.float32))
    assert direct.shape == (4, 3)
    np.testing.assert_array_equal(direct.to_dense().numpy(), reference())


def test_dense_to_sparse_and_hybrid():
    x = ember.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    s = x.to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1], [1, 0]] and s.values().tolist() == [1.0, 2.0]
    h = ember.tensor([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]).to_sparse(2)
    assert (h.sparse_dim(), h.dense_dim(), h._nnz()) == (2, 1, 1)
    assert h.values().tolist() == [[1.0, 0.0]]
    np.testing.assert_array_equal(h.to_dense().numpy(), [[[0, 0], [1, 0]], [[0, 0], [0, 0]]])
    assert x.to_sparse(layout=ember.sparse_csr).layout is ember.sparse_csr


def test_size_is_inferred_and_dtype_converts_values():
    a = ember.sparse_coo_tensor(INDICES, [1, 2, 3, 4])
    assert a.shape == (4, 3) and a.dtype is ember.int64
    b = ember.sparse_coo_tensor(INDICES, [1, 2, 3, 4], dtype=ember.float64)
    assert b.dtype is ember.float64


def test_legacy_constructors():
    a = ember.sparse.FloatTensor(ember.tensor(INDICES), ember.tensor([1, 2, 3, 4]), ember.Size([4, 3]))
    assert a.dtype is ember.float32 and a.layout is ember.sparse_coo
    assert isinstance(a, ember.sparse.FloatTensor) and not isinstance(a, ember.sparse.DoubleTensor)
    empty = ember.sparse.DoubleTensor(2, 3)
    assert empty.shape == (2, 3) and empty._nnz() == 0 and empty.dtype is ember.float64


@pytest.mark.parametrize("indices, size, message", [
    ([[0, 1], [2, 3]], (2, 3), "for dim 1, size is 3 but found index 3"),
    ([[0, -1], [0, 0]], (2, 3), "found negative index -1 for dim 0"),
    ([0, 1], (2, 3), r"indices must be sparse_dim x nnz, but got: \[2\]"),
    ([[0, 1], [0, 1]], (2,), "'len\\(size\\) == sparse_dim \\+ dense_dim' is not satisfied"),
])
def test_coo_construction_errors(indices, size, message):
    with pytest.raises(RuntimeError, match=message):
        ember.sparse_coo_tensor(indices, [1.0, 2.0], size)


def test_invariant_checks_can_be_switched_off():
    with ember.sparse.check_sparse_tensor_invariants(False):
        assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()
        a = ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (2,))
    assert a._nnz() == 2 and ember.sparse.check_sparse_tensor_invariants.is_enabled()


@pytest.mark.parametrize("crow, col, message", [
    ([0, 2, 1], [2, 0], "crow_indices\\[..., -1\\] == nnz"),
    ([1, 1, 2], [2, 0], "crow_indices\\[..., 0\\] == 0"),
    ([0, 1, 2], [2, 5], "0 <= col_indices < ncols"),
    ([0, 2, 2], [2, 0], "sorted and distinct"),
    ([0, 1, 2, 2], [2, 0], "number of rows \\+ 1 \\(=3\\), but got 4"),
])
def test_csr_construction_errors(crow, col, message):
    with pytest.raises(RuntimeError, match=message):
        ember.sparse_csr_tensor(crow, col, [3.0, 4.0], (2, 3))


def test_requires_grad_needs_a_floating_dtype():
    with pytest.raises(RuntimeError, match="floating point"):
        ember.sparse_coo_tensor(INDICES, [1, 2, 3, 4], requires_grad=True)


def test_dense_op_on_a_sparse_tensor_names_the_op():
    with pytest.raises(UnsupportedLayoutError, match=r"^exp: no implementation for a sparse_coo tensor of shape "
                                                     r"\(4, 3\)"):
        ember.exp(coo())
    with pytest.raises(NotImplementedError, match="cumsum"):
        coo().cumsum(0)
    with pytest.raises(TypeError, match="to_dense"):
        coo().numpy()


def test_to_and_clone_move_every_component():
    a = coo(requires_grad=True)
    b = a.double()
    assert b.dtype is ember.float64 and b.layout is ember.sparse_coo and b.requires_grad
    c = a.detach().clone()
    assert not c.requires_grad and c._values() is not a._values()
    np.testing.assert_array_equal(c.to_dense().numpy(), reference())
