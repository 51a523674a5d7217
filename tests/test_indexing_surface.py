"""Parity with PyTorch for the indexing and scattering functions: index_copy/fill/reduce/put, put, take,
take_along_dim, masked_scatter, scatter_reduce, the *_scatter ops, fill and fill_diagonal_ — values, in-place
forms, gradients and errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(15)


def _values(*shape):
    return RNG.standard_normal(shape)


def _both(values, grad=False):
    """One array as an ember tensor and a torch tensor (float64, optionally requiring grad)."""
    return ember.tensor(values, requires_grad=grad), torch.tensor(values, requires_grad=grad)


def _index(values):
    return ember.tensor(np.asarray(values, np.int64)), torch.tensor(np.asarray(values, np.int64))


def _same(ours, theirs, atol=1e-12):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol, rtol=1e-12)


def _grads_agree(ember_fn, torch_fn, *arrays):
    """Same values, and the same gradients of a weighted sum of the result for every floating input."""
    pairs = [_both(a, grad=True) for a in arrays]
    ours, theirs = ember_fn(*(p[0] for p in pairs)), torch_fn(*(p[1] for p in pairs))
    _same(ours, theirs)
    weights = RNG.standard_normal(tuple(theirs.shape))
    ember.sum(ours * ember.tensor(weights)).backward()
    (theirs * torch.tensor(weights)).sum().backward()
    for ember_input, torch_input in pairs:
        np.testing.assert_allclose(ember_input.grad.numpy(), torch_input.grad.numpy(), atol=1e-10)


# -- index_copy, index_fill, index_put, put, take ----------------------------------------------------------

def test_index_copy_values_inplace_and_gradients():
    e_index, t_index = _index([3, 0, 2])
    _grads_agree(lambda x, s: ember.index_copy(x, 1, e_index, s), lambda x, s: torch.index_copy(x, 1, t_index, s),
                 _values(2, 4), _values(2, 3))
    (x, tx), (s, ts) = _both(_values(5, 2)), _both(_values(3, 2))
    assert x.index_copy_(0, e_index, s) is x
    _same(x, tx.index_copy_(0, t_index, ts))


def test_index_fill_with_number_and_tensor_value():
    e_index, t_index = _index([1, 1, 0])
    (x, tx) = _both(_values(3, 4))
    _same(x.index_fill(1, e_index, -2.5), tx.index_fill(1, t_index, -2.5))
    _grads_agree(lambda a, v: ember.index_fill(a, 0, e_index, v), lambda a, v: torch.index_fill(a, 0, t_index, v),
                 _values(3, 4), np.array(1.5))
    x.index_fill_(0, e_index, 7.0)
    _same(x, tx.index_fill_(0, t_index, 7.0))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_is_out_of_place(accumulate):
    rows, t_rows = _index([0, 2, 2] if accumulate else [0, 2, 1])
    _grads_agree(lambda x, v: ember.index_put(x, (rows,), v, accumulate),
                 lambda x, v: torch.index_put(x, (t_rows,), v, accumulate), _values(3, 2), _values(3, 2))
    x, tx = _both(_values(3, 2))
    out = x.index_put((rows,), ember.tensor(1.0, dtype=ember.float64), accumulate)
    _same(out, tx.index_put((t_rows,), torch.tensor(1.0, dtype=torch.float64), accumulate))
    assert out is not x and out.data_ptr_id() != x.data_ptr_id()


def test_take_with_negative_indices_and_gradients():
    e_index, t_index = _index([[-1, 0], [5, -6]])
    _grads_agree(lambda x: ember.take(x, e_index), lambda x: torch.take(x, t_index), _values(2, 3))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_and_put_(accumulate):
    e_index, t_index = _index([4, -1, 4, 0] if accumulate else [4, -1, 2, 0])
    _grads_agree(lambda x, s: ember.put(x, e_index, s, accumulate), lambda x, s: torch.put(x, t_index, s, accumulate),
                 _values(2, 3), _values(4))
    (x, tx), (s, ts) = _both(_values(2, 3)), _both(_values(2, 2))
    assert x.put_(e_index, s, accumulate) is x
    _same(x, tx.put_(t_index, ts, accumulate))


def test_take_along_dim_broadcasts_and_flattens():
    e_index, t_index = _index(RNG.integers(0, 3, (1, 5)))
    _grads_agree(lambda x: ember.take_along_dim(x, e_index, 1), lambda x: torch.take_along_dim(x, t_index, 1),
                 _values(3, 4))
    flat, t_flat = _index([0, 11, 3])
    _grads_agree(lambda x: ember.take_along_dim(x, flat), lambda x: torch.take_along_dim(x, t_flat), _values(3, 4))


def test_masked_scatter_values_broadcast_and_gradients():
    mask = RNG.random((3, 4)) < 0.5
    e_mask, t_mask = ember.tensor(mask), torch.tensor(mask)
    _grads_agree(lambda x, s: ember.masked_scatter(x, e_mask, s), lambda x, s: torch.masked_scatter(x, t_mask, s),
                 _values(3, 4), _values(13))
    row, t_row = ember.tensor(mask[0]), torch.tensor(mask[0])
    _grads_agree(lambda x, s: x.masked_scatter(row, s), lambda x, s: x.masked_scatter(t_row, s), _values(3, 4),
                 _values(2, 6))
    (x, tx), (source, t_source) = _both(_values(3, 4)), _both(_values(12))
    assert x.masked_scatter_(e_mask, source) is x
    _same(x, tx.masked_scatter_(t_mask, t_source))


# -- scatter_reduce, index_reduce -------------------------------------------------------------------------

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_matches_torch(reduce, include_self):
    index = RNG.integers(0, 3, (4, 5))
    e_index, t_index = _index(index)
    _grads_agree(lambda x, s: ember.scatter_reduce(x, 0, e_index, s, reduce, include_self=include_self),
                 lambda x, s: torch.scatter_reduce(x, 0, t_index, s, reduce, include_self=include_self),
                 _values(3, 6), _values(4, 5))


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_integers_exact_and_inplace(reduce):
    values = RNG.integers(-6, 7, (6, 4))
    index = RNG.integers(0, 4, (6, 4))
    ours = ember.tensor(values).scatter_reduce(1, ember.tensor(index), ember.tensor(values), reduce)
    theirs = torch.tensor(values).scatter_reduce(1, torch.tensor(index), torch.tensor(values), reduce)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = ember.tensor(values)
    x.scatter_reduce_(1, ember.tensor(index), ember.tensor(values), reduce, include_self=False)
    np.testing.assert_array_equal(x.numpy(), torch.tensor(values).scatter_reduce_(
        1, torch.tensor(index), torch.tensor(values), reduce, include_self=False).numpy())


def test_scatter_reduce_propagates_nan_like_torch():
    values = np.array([1.0, np.nan, 3.0, -2.0])
    index = np.array([0, 0, 1, 1])
    for reduce in ("amax", "amin", "prod"):
        ours = ember.zeros(2, dtype=ember.float64).scatter_reduce(0, ember.tensor(index), ember.tensor(values),
                                                                  reduce)
        theirs = torch.zeros(2, dtype=torch.float64).scatter_reduce(0, torch.tensor(index), torch.tensor(values),
                                                                    reduce)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_matches_torch(reduce, include_self):
    e_index, t_index = _index([2, 0, 2, 2, 1])
    _grads_agree(lambda x, s: ember.index_reduce(x, 1, e_index, s, reduce, include_self=include_self),
                 lambda x, s: torch.index_reduce(x, 1, t_index, s, reduce, include_self=include_self),
                 _values(2, 4), _values(2, 5))


# -- diagonal_scatter, select_scatter, slice_scatter -------------------------------------------------------

@pytest.mark.parametrize("offset, dim1, dim2", [(0, 0, 1), (1, 1, 2), (-1, 2, 0)])
def test_diagonal_scatter(offset, dim1, dim2):
    x = _values(3, 4, 5)
    length = torch.diagonal(torch.tensor(x), offset, dim1, dim2).shape
    _grads_agree(lambda a, s: ember.diagonal_scatter(a, s, offset, dim1, dim2),
                 lambda a, s: torch.diagonal_scatter(a, s, offset, dim1, dim2), x, _values(*length))


def test_select_and_slice_scatter():
    _grads_agree(lambda a, s: ember.select_scatter(a, s, 1, -1), lambda a, s: torch.select_scatter(a, s, 1, -1),
                 _values(3, 4), _values(3))
    _grads_agree(lambda a, s: ember.slice_scatter(a, s, 1, 1, None, 2),
                 lambda a, s: torch.slice_scatter(a, s, 1, 1, None, 2), _values(3, 6), _values(3, 3))
    _grads_agree(lambda a, s: ember.slice_scatter(a, s, start=-2), lambda a, s: torch.slice_scatter(a, s, start=-2),
                 _values(4, 2), _values(2, 2))


# -- fill, zero_, fill_diagonal_ ---------------------------------------------------------------------------

def test_fill_functions_and_methods():
    x, tx = _both(_values(2, 3))
    _same(ember.fill(x, 2.0), torch.fill(tx, 2.0))
    assert ember.fill_(x, 4.0) is x and float(x[1, 2]) == 4.0
    assert ember.zero_(x) is x and float(ember.sum(ember.abs(x))) == 0.0
    _grads_agree(lambda a, v: ember.fill(a, v) * a, lambda a, v: torch.fill(a, v) * a, _values(2, 3), np.array(0.5))


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((7, 3), False), ((7, 3), True), ((2, 5), True),
                                         ((3, 3, 3), False)])
def test_fill_diagonal_(shape, wrap):
    x, tx = _both(_values(*shape))
    assert x.fill_diagonal_(9.0, wrap) is x
    _same(x, tx.fill_diagonal_(9.0, wrap))


# -- errors ------------------------------------------------------------------------------------------------

def test_errors_name_the_op():
    x = ember.zeros(3, 4, dtype=ember.float64)
    with pytest.raises(ValueError, match="scatter_reduce: reduce must be one of"):
        ember.scatter_reduce(x, 0, ember.zeros(1, 4, dtype=ember.int64), x, "max")
    with pytest.raises(ValueError, match="index_reduce: reduce must be one of"):
        ember.index_reduce(x, 0, ember.tensor([0]), ember.zeros(1, 4, dtype=ember.float64), "sum")
    with pytest.raises(ember.OutOfRangeError, match="index_copy: index 5 is out of bounds"):
        ember.index_copy(x, 0, ember.tensor([5]), ember.zeros(1, 4, dtype=ember.float64))
    with pytest.raises(ember.DtypeError, match="index_copy: source must be a tensor of input's dtype float64"):
        ember.index_copy(x, 0, ember.tensor([1]), ember.zeros(1, 4, dtype=ember.float32))
    with pytest.raises(ember.ShapeError, match="masked_scatter: the mask selects 12 elements but source has only 3"):
        ember.masked_scatter(x, ember.ones(3, 4, dtype=ember.bool), ember.zeros(3, dtype=ember.float64))
    with pytest.raises(ember.OutOfRangeError, match="take: index 12 is out of bounds"):
        ember.take(x, ember.tensor([12]))
    with pytest.raises(ember.OutOfRangeError, match="take_along_dim: index -1 is out of bounds"):
        ember.take_along_dim(x, ember.tensor([[-1]]), 1)
    with pytest.raises(ember.ShapeError, match=r"slice_scatter: src must have the shape of the view it fills, "
                                               r"\(3, 2\)"):
        ember.slice_scatter(x, ember.zeros(3, 3, dtype=ember.float64), 1, 0, 2)
    with pytest.raises(IndexError, match="put: index and source need the same number of elements"):  # as PyTorch
        ember.put(x, ember.tensor([0, 1]), ember.zeros(3, dtype=ember.float64))
    with pytest.raises(ember.ShapeError, match="fill_diagonal_: all dimensions of input must be of equal length"):
        ember.zeros(2, 3, 4).fill_diagonal_(1.0)
