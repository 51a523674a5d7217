"""Parity with PyTorch for sets, histograms, searching and grids: values, dtypes, gradients and clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember

from torch_parity import assert_same

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)


def _both(values):
    return ember.tensor(values), torch.tensor(values)


@pytest.mark.parametrize("kwargs", [{}, {"return_inverse": True}, {"return_counts": True},
                                    {"return_inverse": True, "return_counts": True}])
def test_unique_matches_torch(kwargs):
    ours, theirs = _both(RNG.integers(0, 4, (3, 5)))
    assert_same(ember.unique(ours, **kwargs), torch.unique(theirs, **kwargs))
    assert_same(ours.unique(**kwargs), theirs.unique(**kwargs))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_dim_matches_torch(dim):
    rows = RNG.integers(0, 2, (2, 3))
    ours, theirs = _both(np.concatenate([rows, rows[::-1], rows]).reshape(3, 2, 3))
    assert_same(ember.unique(ours, dim=dim, return_inverse=True, return_counts=True),
                torch.unique(theirs, dim=dim, return_inverse=True, return_counts=True))


def test_unique_consecutive_matches_torch():
    ours, theirs = _both(np.array([1, 1, 2, 2, 3, 1, 1, 2]))
    assert_same(ember.unique_consecutive(ours, return_inverse=True, return_counts=True),
                torch.unique_consecutive(theirs, return_inverse=True, return_counts=True))
    ours, theirs = _both(np.array([[1, 1], [1, 1], [2, 0], [1, 1]]))
    assert_same(ember.unique_consecutive(ours, return_counts=True, dim=0),
                torch.unique_consecutive(theirs, return_counts=True, dim=0))


def test_unique_floats_and_empty():
    ours, theirs = _both(np.array([0.5, -1.0, 0.5, 2.0]))
    assert_same(ember.unique(ours, return_inverse=True), torch.unique(theirs, return_inverse=True))
    empty = ember.unique(ember.tensor([]), return_counts=True)
    assert empty[0].shape == (0,) and empty[1].dtype is ember.int64


@pytest.mark.parametrize("kwargs", [{}, {"right": True}, {"side": "right"}, {"out_int32": True}])
def test_searchsorted_matches_torch(kwargs):
    edges = np.array([1.0, 2.0, 2.0, 4.0, 7.0])
    values = np.array([[0.0, 2.0, 5.0], [7.0, 8.0, 1.0]])
    assert_same(ember.searchsorted(ember.tensor(edges), ember.tensor(values), **kwargs),
                torch.searchsorted(torch.tensor(edges), torch.tensor(values), **kwargs))


def test_searchsorted_batched_and_sorter():
    edges = np.sort(RNG.standard_normal((2, 6)), axis=1)
    values = RNG.standard_normal((2, 4))
    assert_same(ember.searchsorted(ember.tensor(edges), ember.tensor(values)),
                torch.searchsorted(torch.tensor(edges), torch.tensor(values)))
    unsorted = RNG.standard_normal(6)
    order = np.argsort(unsorted)
    assert_same(ember.searchsorted(ember.tensor(unsorted), ember.tensor(values[0]), sorter=ember.tensor(order)),
                torch.searchsorted(torch.tensor(unsorted), torch.tensor(values[0]), sorter=torch.tensor(order)))


def test_bucketize_matches_torch():
    boundaries = np.array([1, 3, 5, 7])
    values = np.array([[0, 3, 6], [7, 9, 1]])
    for right in (False, True):
        assert_same(ember.bucketize(ember.tensor(values), ember.tensor(boundaries), right=right),
                    torch.bucketize(torch.tensor(values), torch.tensor(boundaries), right=right))


def test_bincount_matches_torch():
    x = np.array([0, 3, 3, 1, 5])
    assert_same(ember.bincount(ember.tensor(x)), torch.bincount(torch.tensor(x)))
    assert_same(ember.bincount(ember.tensor(x), minlength=8), torch.bincount(torch.tensor(x), minlength=8))
    for dtype in (np.float32, np.float64, np.int32):
        w = RNG.uniform(0, 2, 5).astype(dtype)
        assert_same(ember.bincount(ember.tensor(x), ember.tensor(w)), torch.bincount(torch.tensor(x), torch.tensor(w)))
    assert_same(ember.tensor(x).bincount(), torch.tensor(x).bincount())


def test_histc_matches_torch():
    x = RNG.standard_normal(50).astype(np.float32)
    assert_same(ember.histc(ember.tensor(x), bins=7), torch.histc(torch.tensor(x), bins=7))
    assert_same(ember.histc(ember.tensor(x), bins=4, min=-1, max=1),
                torch.histc(torch.tensor(x), bins=4, min=-1, max=1))
    assert_same(ember.tensor(x).histc(5), torch.tensor(x).histc(5))


@pytest.mark.parametrize("kwargs", [{}, {"range": (-1.0, 1.0)}, {"density": True}])
def test_histogram_matches_torch(kwargs):
    x, w = RNG.standard_normal(40), RNG.uniform(0, 1, 40)
    ours = ember.histogram(ember.tensor(x), 5, weight=ember.tensor(w), **kwargs)
    theirs = torch.histogram(torch.tensor(x), 5, weight=torch.tensor(w), **kwargs)
    assert_same(tuple(ours), tuple(theirs))
    edges = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    assert_same(tuple(ember.tensor(x).histogram(ember.tensor(edges), density=True)),
                tuple(torch.tensor(x).histogram(torch.tensor(edges), density=True)))


def test_histogramdd_matches_torch():
    points = RNG.standard_normal((30, 2))
    ours = ember.histogramdd(ember.tensor(points), bins=[3, 4])
    theirs = torch.histogramdd(torch.tensor(points), bins=[3, 4])
    assert_same(ours.hist, theirs.hist)
    assert_same(tuple(ours.bin_edges), tuple(theirs.bin_edges))
    ranged = ember.histogramdd(ember.tensor(points), bins=2, range=[-1.0, 1.0, -2.0, 2.0], density=True)
    expected = torch.histogramdd(torch.tensor(points), bins=2, range=[-1.0, 1.0, -2.0, 2.0], density=True)
    assert_same(ranged.hist, expected.hist)


def test_counting_errors_name_the_op():
    with pytest.raises(ValueError, match="bincount"):
        ember.bincount(ember.tensor([1, -1]))
    with pytest.raises(ember.ShapeError, match="bincount"):
        ember.bincount(ember.tensor([0.5]))
    with pytest.raises(ember.ShapeError, match="searchsorted"):
        ember.searchsorted(ember.ones(2, 3), ember.ones(3, 3))
    with pytest.raises(ValueError, match="searchsorted"):
        ember.searchsorted(ember.ones(3), ember.ones(2), right=True, side="left")
    with pytest.raises(ValueError, match="histc"):
        ember.histc(ember.ones(3), bins=3, min=2, max=1)
    with pytest.raises(ember.DtypeError, match="histc"):
        ember.histc(ember.ones(3, dtype=ember.int64))


def test_grids_match_torch():
    a, b = np.arange(3), np.arange(4, 6)
    for indexing in ("ij", "xy"):
        assert_same(ember.meshgrid(ember.tensor(a), ember.tensor(b), indexing=indexing),
                    torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing))
    assert_same(ember.cartesian_prod(ember.tensor(a), ember.tensor(b)),
                torch.cartesian_prod(torch.tensor(a), torch.tensor(b)))
    for r, replace in ((2, False), (3, True), (4, False), (0, False)):
        assert_same(ember.combinations(ember.tensor(a), r, replace), torch.combinations(torch.tensor(a), r, replace))
    assert_same(ember.block_diag(ember.ones(2, 2, dtype=ember.int32), ember.tensor([1.0, 2.0]), ember.tensor(3.0)),
                torch.block_diag(torch.ones(2, 2, dtype=torch.int32), torch.tensor([1.0, 2.0]), torch.tensor(3.0)))
    assert_same(ember.vander(ember.tensor(a)), torch.vander(torch.tensor(a)))
    assert_same(ember.vander(ember.tensor([0.5, 2.0]), N=4, increasing=True),
                torch.vander(torch.tensor([0.5, 2.0]), N=4, increasing=True))
    for offset in (-1, 0, 2):
        assert_same(ember.tril_indices(4, 3, offset), torch.tril_indices(4, 3, offset))
        assert_same(ember.triu_indices(3, 5, offset, dtype=ember.int32),
                    torch.triu_indices(3, 5, offset, dtype=torch.int32))


def test_broadcasting_matches_torch():
    x, y = _both(RNG.standard_normal((3, 1)))
    assert_same(ember.broadcast_to(x, (2, 3, 4)), torch.broadcast_to(y, (2, 3, 4)))
    assert_same(x.broadcast_to((2, -1, 4)), y.broadcast_to((2, -1, 4)))
    assert_same(ember.broadcast_tensors(x, ember.ones(4)), torch.broadcast_tensors(y, torch.ones(4)))
    assert ember.broadcast_shapes((2, 1), (3,), 1) == tuple(torch.broadcast_shapes((2, 1), (3,), 1))
    with pytest.raises(ember.ShapeError, match="broadcast_to"):
        ember.broadcast_to(x, (2, 2))
    with pytest.raises(ember.ShapeError, match="broadcast_shapes"):
        ember.broadcast_shapes((2,), (3,))


def test_grid_gradients_match_torch():
    values = RNG.standard_normal(3)
    ours, theirs = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    weights = RNG.standard_normal((3, 4))
    (ember.vander(ours, 4) * ember.tensor(weights)).sum().backward()  # torch's own vander backward fails here
    powers = np.arange(3, -1, -1)
    analytic = (weights * powers * values[:, None] ** np.maximum(powers - 1, 0)).sum(1)
    np.testing.assert_allclose(ours.grad.numpy(), analytic, rtol=1e-10)
    ours.grad = None
    (ember.combinations(ours, 2) * ember.tensor(weights[:, :2])).sum().backward()
    (torch.combinations(theirs, 2) * torch.tensor(weights[:, :2])).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


def test_meshgrid_outputs_are_views_of_their_inputs():
    a = ember.zeros(3)
    grid_a, _ = ember.meshgrid(a, ember.zeros(2), indexing="ij")
    a.fill_(2.5)
    assert grid_a.tolist() == [[2.5, 2.5]] * 3
