"""Parity with PyTorch of the order statistics, scans and nan-aware reductions: values, indices, named results,
gradients and refusals."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.dispatch.schema.errors import DtypeError, OutOfRangeError, ShapeError

torch = pytest.importorskip("torch")

NAN = math.nan


def _pair(values, dtype="float64"):
    array = np.array(values, dtype=dtype)
    return ember.tensor(array), torch.tensor(array)


def _same(ours, theirs, rtol=1e-12):
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            _same(mine, reference, rtol)
        return
    ours, theirs = ours.numpy(), theirs.detach().numpy()
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (ours.shape, theirs.shape, ours.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, equal_nan=True)


ROWS = [[3.0, 1.0, 4.0, 1.5, 9.0, 2.6], [5.0, NAN, 2.0, 7.0, -1.0, 0.5], [NAN] * 6, [2.0, -2.0, 8.0, 0.0, 3.5, 6.0]]


@pytest.mark.parametrize("keepdim", [False, True])
def test_median_and_nanmedian_along_dims_with_nan(keepdim):
    """Indices are compared where the selected value occurs once: among equal values (and in a row of NaN for
    nanmedian) PyTorch's choice is unspecified, Ember's is the first."""
    x, tx = _pair(ROWS)
    for dim in (0, 1, -1):
        _same(ember.median(x, dim, keepdim), tuple(torch.median(tx, dim, keepdim)))
        _same(ember.nanmedian(x, dim, keepdim).values, torch.nanmedian(tx, dim, keepdim).values)
    rows, trows = _pair([ROWS[0], ROWS[1], ROWS[3]])
    _same(ember.nanmedian(rows, 1, keepdim), tuple(torch.nanmedian(trows, 1, keepdim)))
    assert ember.nanmedian(x, 1).indices.tolist()[2] == 0  # the first of a row of NaN
    result = x.median(1, keepdim=keepdim)
    assert result._fields == ("values", "indices") and result.values.shape == result.indices.shape


def test_median_of_every_element_is_the_lower_median():
    for values in ([4.0, 1.0, 3.0, 2.0], [[5.0, 1.0], [2.0, 9.0], [3.0, 3.0]], [1.0, NAN, 2.0], [7.0]):
        x, tx = _pair(values)
        _same(ember.median(x), torch.median(tx))
        _same(ember.nanmedian(x), torch.nanmedian(tx))
        _same(x.median(), tx.median())
    ints, tints = _pair([[4, 1, 3, 2], [9, 9, 0, 1]], "int64")
    _same(ember.median(ints), torch.median(tints))
    _same(ember.median(ints, 1), tuple(torch.median(tints, 1)))


def test_kthvalue_matches_torch_for_every_k_and_dim():
    rng = np.random.default_rng(0)
    x, tx = _pair(rng.permutation(24).reshape(2, 3, 4) * 1.5)
    for dim in (0, 1, 2, None):
        length = 4 if dim is None else x.shape[dim]
        for k in range(1, length + 1):
            args = (k,) if dim is None else (k, dim)
            _same(ember.kthvalue(x, *args), tuple(torch.kthvalue(tx, *args)))
    _same(ember.kthvalue(x, 2, 1, True), tuple(torch.kthvalue(tx, 2, 1, True)))
    _same(ember.kthvalue(*_pair(3.5)[:1], 1), tuple(torch.kthvalue(torch.tensor(3.5, dtype=torch.float64), 1)))
    with pytest.raises(OutOfRangeError, match="kthvalue"):
        ember.kthvalue(x, 5, 2)
    with pytest.raises(OutOfRangeError, match="kthvalue"):
        ember.kthvalue(x, 0)


def test_mode_picks_the_smallest_most_frequent_value_at_its_last_index():
    for values in ([[1, 2, 2, 3, 3, 1]], [[5, 5, 1, 7], [0, 3, 3, 3]], [[4, 4, 4, 4]], [[9], [2]]):
        x, tx = _pair(values, "int64")
        for dim in (0, 1):
            for keepdim in (False, True):
                _same(ember.mode(x, dim, keepdim), tuple(torch.mode(tx, dim, keepdim)))
    x, tx = _pair([[0.5, -1.0, 0.5, 2.0], [3.0, 3.0, -1.0, -1.0]])
    _same(x.mode(), tuple(tx.mode()))


def test_msort_sorts_along_the_first_dim():
    x, tx = _pair([[3.0, NAN, 1.0], [1.0, 2.0, -4.0], [2.0, 0.0, 8.0]])
    _same(ember.msort(x), torch.msort(tx))
    _same(x.msort(), tx.msort())


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_and_nanquantile_match_torch(interpolation):
    rng = np.random.default_rng(1)
    data = rng.normal(size=(3, 4, 5))
    data[0, 1, 2] = data[2, 3, 0] = NAN
    x, tx = _pair(data)
    q, tq = _pair([0.0, 0.1, 0.5, 0.625, 1.0])
    for name in ("quantile", "nanquantile"):
        ours, theirs = getattr(ember, name), getattr(torch, name)
        for dim in (None, 0, 2, -2):
            for keepdim in (False, True):
                for qs, tqs in ((0.3, 0.3), (0.5, 0.5), (q, tq)):
                    expected = theirs(tx, tqs, dim, keepdim, interpolation=interpolation)
                    _same(ours(x, qs, dim, keepdim, interpolation=interpolation), expected)


def test_quantile_gradient_and_refusals():
    values = np.array([[0.3, -1.0, 2.0, 0.7], [5.0, 1.5, -0.5, 0.1]])
    x, tx = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    ember.quantile(x, 0.4, 1).sum().backward()
    torch.quantile(tx, 0.4, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="quantile"):
        ember.quantile(x.detach(), 1.5)
    with pytest.raises(DtypeError, match="quantile"):
        ember.quantile(ember.tensor([1, 2, 3]), 0.5)
    with pytest.raises(DtypeError, match="same dtype"):
        ember.quantile(x.detach(), ember.tensor([0.5], dtype=ember.float32))
    with pytest.raises(ShapeError, match="non-empty"):
        ember.quantile(ember.tensor([], dtype=ember.float64), 0.5)
    with pytest.raises(ValueError, match="interpolation"):
        ember.quantile(x.detach(), 0.5, interpolation="cubic")


@pytest.mark.parametrize("name", ["median", "nanmedian", "kthvalue", "mode"])
def test_gradient_flows_to_the_selected_element(name):
    values = np.array([[0.3, -1.0, 2.0, 0.7, 0.1], [5.0, 1.5, -0.5, 0.1, 1.5]])
    if name != "mode":  # distinct values: PyTorch's index among equal ones is unspecified
        values[1, 4] = 1.6
    x, tx = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    args = (3, 1) if name == "kthvalue" else (1,)
    weights = np.array([2.0, -3.0])
    (getattr(ember, name)(x, *args).values * ember.tensor(weights)).sum().backward()
    (getattr(torch, name)(tx, *args).values * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


SCAN_ROWS = [[1.0, 3.0, 3.0, NAN, 5.0, NAN, 2.0], [-1.0, -1.0, 4.0, 0.0, 4.0, 9.0, -7.0]]


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_and_cummin_take_the_latest_of_ties_and_propagate_nan(name):
    x, tx = _pair(SCAN_ROWS)
    for dim in (0, 1, -1):
        _same(getattr(ember, name)(x, dim), tuple(getattr(torch, name)(tx, dim)))
    rng = np.random.default_rng(2)
    ints, tints = _pair(rng.integers(-3, 3, size=(3, 17)), "int32")
    _same(getattr(ints, name)(1), tuple(getattr(tints, name)(1)))


@pytest.mark.parametrize("name", ["cummax", "cummin", "logcumsumexp"])
def test_scan_gradients_match_torch(name):
    values = np.array([[0.3, -1.0, 2.0, 0.7, 2.0], [5.0, 1.5, -0.5, 0.1, 7.0]])
    x, tx = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    ours, theirs = getattr(ember, name)(x, 1), getattr(torch, name)(tx, 1)
    ours, theirs = (ours, theirs) if name == "logcumsumexp" else (ours.values, theirs.values)
    weights = np.arange(10.0).reshape(2, 5) - 4
    (ours * ember.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)


def test_logcumsumexp_is_exact_across_wide_ranges():
    x, tx = _pair([[-1000.0, 0.0, 1.0, 700.0, -math.inf, 701.0], [-math.inf, -math.inf, 3.0, 2.0, 1.0, 0.0]])
    _same(ember.logcumsumexp(x, 1), torch.logcumsumexp(tx, 1))
    _same(x.logcumsumexp(0), tx.logcumsumexp(0))


def test_nansum_nanmean_and_count_nonzero():
    x, tx = _pair(ROWS)
    _same(ember.nansum(x), torch.nansum(tx))
    _same(ember.nansum(x, 1, True), torch.nansum(tx, 1, True))
    _same(ember.nansum(x, (0, 1), dtype=ember.float32), torch.nansum(tx, (0, 1), dtype=torch.float32))
    _same(ember.nanmean(x, 1), torch.nanmean(tx, 1))
    _same(x.nanmean(), tx.nanmean())
    _same(ember.count_nonzero(x), torch.count_nonzero(tx))
    _same(ember.count_nonzero(x, (0, 1)), torch.count_nonzero(tx, (0, 1)))
    _same(x.count_nonzero(1), tx.count_nonzero(1))
    ints, tints = _pair([[1, 0, 3], [0, 0, 7]], "int16")
    _same(ember.nansum(ints, 0), torch.nansum(tints, 0))
    values = np.array([[1.0, NAN, 2.0], [NAN, 4.0, -1.0]])
    y, ty = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (ember.nanmean(y, 1) * ember.tensor([2.0, 3.0])).sum().backward()
    (torch.nanmean(ty, 1) * torch.tensor([2.0, 3.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())


def test_aminmax_std_mean_and_var_mean():
    x, tx = _pair([[3.0, -1.0, 2.0], [0.5, 8.0, 8.0]])
    result = ember.aminmax(x)
    assert result._fields == ("min", "max")
    _same(tuple(result), tuple(torch.aminmax(tx)))
    _same(tuple(ember.aminmax(x, dim=1, keepdim=True)), tuple(torch.aminmax(tx, dim=1, keepdim=True)))
    _same(tuple(x.aminmax(dim=0)), tuple(tx.aminmax(dim=0)))
    for name in ("std_mean", "var_mean"):
        ours, theirs = getattr(ember, name), getattr(torch, name)
        _same(tuple(ours(x)), theirs(tx))
        _same(tuple(ours(x, 1, correction=0, keepdim=True)), theirs(tx, 1, correction=0, keepdim=True))
    values = np.array([[3.0, -1.0, 8.0], [0.5, 8.0, 8.0]])
    y, ty = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    low, high = ember.aminmax(y)
    (low * 2 + high * 3).backward()
    low, high = torch.aminmax(ty)
    (low * 2 + high * 3).backward()
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())


def test_isin_with_tensors_numbers_and_invert():
    elements, telements = _pair([[1, 5, 3], [2, 2, 9]], "int64")
    tests, ttests = _pair([2, 3, 11], "int64")
    _same(ember.isin(elements, tests), torch.isin(telements, ttests))
    _same(ember.isin(elements, tests, invert=True), torch.isin(telements, ttests, invert=True))
    _same(ember.isin(elements, 5), torch.isin(telements, 5))
    _same(ember.isin(elements, ember.tensor([2.0, 9.5])), torch.isin(telements, torch.tensor([2.0, 9.5])))
    _same(ember.isin(elements, ember.tensor([], dtype=ember.int64)),
          torch.isin(telements, torch.tensor([], dtype=torch.int64)))
