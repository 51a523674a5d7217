"""Parity with PyTorch for products, statistics and diagonals: values and gradients, and clear errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _pair(*shape_, dtype=np.float64):
    """The same random values as an ember tensor and a torch tensor, both requiring grad when floating."""
    values = RNG.standard_normal(shape_).astype(dtype)
    grad = np.issubdtype(dtype, np.floating)
    return (ember.tensor(values, requires_grad=grad), torch.tensor(values, requires_grad=grad))


def _check(ember_fn, torch_fn, *shapes, atol=1e-10, grad=True):
    """Same values, then the same gradients of the sum of the outputs times fixed weights."""
    pairs = [_pair(*s) for s in shapes]
    ours = ember_fn(*[p[0] for p in pairs])
    theirs = torch_fn(*[p[1] for p in pairs])
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=atol, rtol=1e-10)
    if not grad:
        return
    weights = [RNG.standard_normal(tuple(b.shape)) for b in theirs]
    sum(ember.sum(a * ember.tensor(w)) for a, w in zip(ours, weights)).backward()
    sum((b * torch.tensor(w)).sum() for b, w in zip(theirs, weights)).backward()
    for ember_input, torch_input in pairs:
        expected = torch_input.grad.numpy() if torch_input.grad is not None else np.zeros(tuple(torch_input.shape))
        got = ember_input.grad.numpy() if ember_input.grad is not None else np.zeros(tuple(ember_input.shape))
        np.testing.assert_allclose(got, expected, atol=1e-9, rtol=1e-9)


PRODUCTS = [
    ("dot", lambda m, a, b: m.dot(a, b), [(5,), (5,)]),
    ("vdot", lambda m, a, b: m.vdot(a, b), [(4,), (4,)]),
    ("inner", lambda m, a, b: m.inner(a, b), [(2, 3), (4, 3)]),
    ("ger", lambda m, a, b: m.ger(a, b), [(3,), (2,)]),
    ("mv", lambda m, a, b: m.mv(a, b), [(3, 4), (4,)]),
    ("tensordot int", lambda m, a, b: m.tensordot(a, b, 2), [(2, 3, 4), (3, 4, 2)]),
    ("tensordot lists", lambda m, a, b: m.tensordot(a, b, ([0, 2], [1, 0])), [(3, 2, 4), (4, 3)]),
    ("kron", lambda m, a, b: m.kron(a, b), [(2, 3), (3, 1, 2)]),
    ("addmm", lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2.0), [(3, 5), (3, 4), (4, 5)]),
    ("addmm beta 0", lambda m, c, a, b: m.addmm(c, a, b, beta=0), [(5,), (3, 4), (4, 5)]),
    ("addmv", lambda m, c, a, b: m.addmv(c, a, b, beta=2, alpha=-1), [(3,), (3, 4), (4,)]),
    ("addr", lambda m, c, a, b: m.addr(c, a, b, alpha=3), [(3, 2), (3,), (2,)]),
    ("baddbmm", lambda m, c, a, b: m.baddbmm(c, a, b, beta=0.5), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addbmm", lambda m, c, a, b: m.addbmm(c, a, b, alpha=0.5), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addcmul", lambda m, c, a, b: m.addcmul(c, a, b, value=0.5), [(2, 3), (3,), (2, 1)]),
    ("addcdiv", lambda m, c, a, b: m.addcdiv(c, a, b, value=2), [(2, 3), (2, 3), (3,)]),
]


@pytest.mark.parametrize("name,call,shapes", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_products_match_torch(name, call, shapes):
    _check(lambda *xs: call(ember, *xs), lambda *xs: call(torch, *xs), *shapes)


def test_inplace_and_methods():
    c, a, b = (RNG.standard_normal(s) for s in ((2, 3), (2, 4), (4, 3)))
    ours, theirs = ember.tensor(c), torch.tensor(c)
    ours.addmm_(ember.tensor(a), ember.tensor(b), beta=2, alpha=3)
    theirs.addmm_(torch.tensor(a), torch.tensor(b), beta=2, alpha=3)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    ours.addcmul_(ember.tensor(c), ember.tensor(c), value=-1)
    theirs.addcmul_(torch.tensor(c), torch.tensor(c), value=-1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    assert ember.tensor(a).mv(ember.tensor(b[:, 0])).shape == (2,)


def test_beta_zero_ignores_nan_input():
    nan = ember.full((2, 2), math.nan)
    out = ember.addmm(nan, ember.ones(2, 3), ember.ones(3, 2), beta=0)
    assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_product_errors_name_the_op():
    with pytest.raises(ember.DtypeError, match="dot"):
        ember.dot(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ember.ShapeError, match="mv"):
        ember.mv(ember.ones(2, 3), ember.ones(2))
    with pytest.raises(ember.ShapeError, match="tensordot"):
        ember.tensordot(ember.ones(2, 3), ember.ones(2, 3), ([0], [1]))
    with pytest.raises(ember.DtypeError, match="addmm"):
        ember.addmm(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, 2, dtype=ember.int64),
                    ember.ones(2, 2, dtype=ember.int64), alpha=0.5)
    with pytest.raises(ember.DtypeError, match="addcdiv"):
        ember.addcdiv(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64),
                      ember.ones(2, dtype=ember.int64))


STATISTICS = [
    ("cdist p2", lambda m, a, b: m.cdist(a, b), [(3, 4), (5, 4)]),
    ("cdist p1 batch", lambda m, a, b: m.cdist(a, b, p=1.0), [(2, 3, 2), (1, 4, 2)]),
    ("cdist p inf", lambda m, a, b: m.cdist(a, b, p=math.inf), [(3, 2), (2, 2)]),
    ("cdist p3", lambda m, a, b: m.cdist(a, b, p=3.0), [(3, 2), (2, 2)]),
    ("cov", lambda m, a: m.cov(a), [(3, 6)]),
    ("cov correction 0", lambda m, a: m.cov(a, correction=0), [(7,)]),
    ("corrcoef", lambda m, a: m.corrcoef(a), [(3, 5)]),
    ("trapezoid", lambda m, y: m.trapezoid(y), [(3, 5)]),
    ("trapezoid dx", lambda m, y: m.trapezoid(y, dx=0.5, dim=0), [(4, 3)]),
    ("trapz x", lambda m, y, x: m.trapz(y, x), [(2, 4), (4,)]),
    ("cumulative_trapezoid", lambda m, y, x: m.cumulative_trapezoid(y, x), [(2, 4), (2, 4)]),
    ("gradient", lambda m, y: m.gradient(y), [(4, 5)]),
    ("gradient spacing edge 2", lambda m, y: m.gradient(y, spacing=2.0, dim=1, edge_order=2), [(3, 5)]),
]


@pytest.mark.parametrize("name,call,shapes", STATISTICS, ids=[s[0] for s in STATISTICS])
def test_statistics_match_torch(name, call, shapes):
    _check(lambda *xs: call(ember, *xs), lambda *xs: call(torch, *xs), *shapes, atol=1e-9)


def test_cov_weights_match_torch():
    x = RNG.standard_normal((2, 5))
    fw, aw = np.array([1, 2, 0, 3, 1]), RNG.uniform(0.5, 2, 5)
    ours = ember.cov(ember.tensor(x), fweights=ember.tensor(fw), aweights=ember.tensor(aw))
    theirs = torch.cov(torch.tensor(x), fweights=torch.tensor(fw), aweights=torch.tensor(aw))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
    assert ember.cov(ember.tensor([[1, 2, 4]])).dtype is ember.float32  # integers: the default float dtype


def test_cdist_gradient_at_zero_distance_is_zero():
    a = ember.tensor([[1.0, 2.0]], requires_grad=True)
    ember.cdist(a, ember.tensor([[1.0, 2.0]])).sum().backward()
    assert a.grad.tolist() == [[0.0, 0.0]]


def test_gradient_with_coordinates_matches_torch():
    y = RNG.standard_normal((3, 4))
    xs = [np.cumsum(RNG.uniform(0.5, 1.5, n)) for n in (3, 4)]
    for order in (1, 2):
        ours = ember.gradient(ember.tensor(y), spacing=[ember.tensor(x) for x in xs], edge_order=order)
        theirs = torch.gradient(torch.tensor(y), spacing=[torch.tensor(x) for x in xs], edge_order=order)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


def test_statistics_errors():
    with pytest.raises(ember.ShapeError, match="cdist"):
        ember.cdist(ember.ones(2, 3), ember.ones(2, 4))
    with pytest.raises(ValueError, match="cdist"):
        ember.cdist(ember.ones(2, 3), ember.ones(2, 3), p=-1.0)
    with pytest.raises(ember.ShapeError, match="cov"):
        ember.cov(ember.ones(2, 2, 2))
    with pytest.raises(ValueError, match="cov"):
        ember.cov(ember.ones(2, 3), fweights=ember.tensor([1, -1, 1]))
    with pytest.raises(ember.ShapeError, match="gradient"):
        ember.gradient(ember.ones(2), edge_order=2)
    with pytest.raises(ember.ShapeError, match="trapezoid"):
        ember.trapezoid(ember.ones(3), ember.ones(4))


DIAGONALS = [
    ("diagonal", lambda m, x: m.diagonal(x, 1), [(3, 4)]),
    ("diagonal dims", lambda m, x: m.diagonal(x, -1, 2, 0), [(3, 2, 4)]),
    ("diag_embed", lambda m, x: m.diag_embed(x, 1, 0, 2), [(2, 3)]),
    ("diag vector", lambda m, x: m.diag(x, -2), [(3,)]),
    ("diag matrix", lambda m, x: m.diag(x, 1), [(3, 4)]),
    ("diagflat", lambda m, x: m.diagflat(x, 1), [(2, 2)]),
    ("trace", lambda m, x: m.trace(x), [(3, 4)]),
]


@pytest.mark.parametrize("name,call,shapes", DIAGONALS, ids=[d[0] for d in DIAGONALS])
def test_diagonals_match_torch(name, call, shapes):
    _check(lambda *xs: call(ember, *xs), lambda *xs: call(torch, *xs), *shapes)


def test_diagonal_is_a_writable_view():
    x = ember.zeros(3, 4)
    x.diagonal(1).fill_(1.0)
    expected = torch.zeros(3, 4)
    expected.diagonal(1).fill_(1.0)
    assert x.tolist() == expected.tolist()
    t = ember.zeros(4, 3).t()  # strided input
    t.diagonal().copy_(ember.tensor([1.0, 2.0, 3.0]))
    assert t.tolist() == [[1.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 3.0, 0]]


def test_diagonal_errors():
    with pytest.raises(IndexError, match="diagonal"):  # as PyTorch: dim 1 is out of range for a 1-D tensor
        ember.diagonal(ember.ones(3))
    with pytest.raises(ember.ShapeError, match="diagonal"):
        ember.diagonal(ember.ones(2, 2), 0, 1, 1)
    with pytest.raises(ember.ShapeError, match="trace"):
        ember.trace(ember.ones(2, 2, 2))
