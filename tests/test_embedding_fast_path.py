"""Embedding lookups and their backward on the fast path: ``nn.Embedding`` and a table indexed as ``C[X]``
(makemore's lookup) both take ``embedding_dense_backward`` for the table's gradient (one numba pass on the
CPU, no ``index_put_``), with PyTorch's values for padding rows, frequency scaling and negative indices."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.dispatch.ops import F
from ember.dispatch.schema.errors import ArgumentError, OutOfRangeError
from op_names import OpNames

torch = pytest.importorskip("torch")


def _indices(shape, high, seed=0, low=0):
    return np.random.default_rng(seed).integers(low, high, shape)


@pytest.mark.parametrize("options", [{}, {"padding_idx": 3}, {"scale_grad_by_freq": True},
                                     {"padding_idx": -2, "scale_grad_by_freq": True}])
def test_embedding_module_matches_torch(options):
    weight = np.random.default_rng(1).standard_normal((27, 16)).astype(np.float32)
    index = _indices((64, 32), 27)
    ours, theirs = nn.Embedding(27, 16, **options), torch.nn.Embedding(27, 16, **options)
    with ember.no_grad():
        ours.weight.copy_(ember.tensor(weight))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(weight))
    out, expected = ours(ember.tensor(index)), theirs(torch.tensor(index))
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    upstream = np.random.default_rng(2).standard_normal(out.shape).astype(np.float32)
    out.backward(ember.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_table_indexed_by_a_tensor_matches_torch_negative_indices_too():
    table = np.random.default_rng(3).standard_normal((27, 16))
    index = _indices((32, 3), 27, low=-27)  # negative rows count from the end
    C, T = ember.tensor(table, requires_grad=True), torch.tensor(table, requires_grad=True)
    ours, theirs = C[ember.tensor(index)], T[torch.tensor(index)]
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    upstream = np.random.default_rng(4).standard_normal(ours.shape)
    (ours * ember.tensor(upstream)).sum().backward()
    (theirs * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(C.grad.numpy(), T.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_three_dim_table_and_a_one_dim_one_take_the_row_pass_too():
    for shape in [(5, 2, 3), (6,)]:
        table = np.random.default_rng(5).standard_normal(shape)
        index = _indices((4, 2), shape[0])
        C, T = ember.tensor(table, requires_grad=True), torch.tensor(table, requires_grad=True)
        C[ember.tensor(index)].sum().backward()
        T[torch.tensor(index)].sum().backward()
        np.testing.assert_array_equal(C.grad.numpy(), T.grad.numpy())


def test_backward_is_one_dense_backward_call_without_index_put():
    embedding = nn.Embedding(27, 16)
    C = ember.randn(27, 16, requires_grad=True)
    index = ember.tensor(_indices((32, 3), 27))
    loss = embedding(index).sum() + C[index].sum()
    with OpNames() as seen:
        loss.backward()
    assert seen.names.count("embedding_dense_backward") == 2
    assert "index_put_" not in seen.names


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dense_backward_op_matches_torch(dtype):
    grad = np.random.default_rng(6).standard_normal((10, 6, 8)).astype(dtype)
    index = _indices((10, 6), 12)
    for padding_idx, scale in [(-1, False), (4, False), (-1, True), (7, True)]:
        ours = F.embedding_dense_backward(ember.tensor(grad), ember.tensor(index), 12, padding_idx, scale)
        theirs = torch.ops.aten.embedding_dense_backward(torch.tensor(grad), torch.tensor(index), 12, padding_idx,
                                                         scale)
        assert ours.dtype is getattr(ember, dtype) and tuple(ours.shape) == (12, 8)
        tolerance = 2e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64),
                                   rtol=tolerance, atol=tolerance)


def test_dense_backward_refuses_bad_arguments_naming_itself():
    grad, index = ember.ones(3, 2), ember.tensor([0, 1, 5])
    with pytest.raises(OutOfRangeError, match="embedding_dense_backward: index 5 is out of range for 4"):
        F.embedding_dense_backward(grad, index, 4, -1, False)
    with pytest.raises(ArgumentError, match="embedding_dense_backward: padding_idx"):
        F.embedding_dense_backward(grad, ember.tensor([0, 1, 2]), 4, 9, False)
    with pytest.raises(ember.dispatch.schema.errors.ShapeError, match="embedding_dense_backward: grad_output"):
        F.embedding_dense_backward(ember.ones(2, 2), ember.tensor([0, 1, 2]), 4, -1, False)
