"""Sparse tensors through ember.save/ember.load (alone, in containers and inside pickled objects), pickle and
copy.deepcopy: layout, size, structure, values and requires_grad come back."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember
from ember.serialization import CheckpointError


def sample():
    return ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))


def same(a, b):
    assert a.layout is b.layout and a.shape == b.shape and a.dtype is b.dtype and a._nnz() == b._nnz()
    np.testing.assert_array_equal(a.to_dense().detach().numpy(), b.to_dense().detach().numpy())


class Holder:
    def __init__(self, tensor):
        self.tensor = tensor


def test_ember_format_round_trip(tmp_path):
    a = sample().requires_grad_()
    hybrid = ember.tensor([[[0.0, 1.0], [0.0, 0.0]], [[2.0, 3.0], [0.0, 0.0]]]).to_sparse(2)
    state = {"coo": a, "csr": sample().to_sparse_csr(), "hybrid": hybrid, "coalesced": sample().coalesce(),
             "dense": ember.ones(2)}
    ember.save(state, tmp_path / "s.ember")
    loaded = ember.load(tmp_path / "s.ember")
    for key in ("coo", "csr", "hybrid", "coalesced"):
        same(loaded[key], state[key])
    assert loaded["coo"].requires_grad and loaded["coo"].is_leaf and not loaded["coo"].is_coalesced()
    assert loaded["coalesced"].is_coalesced()
    assert loaded["csr"].crow_indices().tolist() == [0, 1, 3]


def test_sparse_tensor_inside_a_pickled_object(tmp_path):
    ember.save({"holder": Holder(sample())}, tmp_path / "o.ember")
    loaded = ember.load(tmp_path / "o.ember", weights_only=False)
    same(loaded["holder"].tensor, sample())


def test_pickle_and_deepcopy():
    a = sample().requires_grad_()
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
        same(b, a)
        assert b.requires_grad and b._values() is not a._values()


def test_damaged_sparse_record_is_refused(tmp_path):
    from ember.sparse.serialization import rebuild
    with pytest.raises(ValueError, match="not the components"):
        rebuild("sparse_csr", (2, 3), {"indices": ember.zeros(2, 1, dtype=ember.int64), "values": ember.ones(1)})
    assert issubclass(CheckpointError, Exception)
