"""Products, reductions, softmax and element-wise ops on sparse tensors, against dense NumPy references, with
gradients checked by finite differences (ember.autograd.gradcheck on the stored values)."""
from __future__ import annotations

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(0)


def random_sparse(rows=5, cols=4, nnz=7, duplicates=False, dtype=np.float64):
    r = RNG.integers(0, rows, nnz)
    c = RNG.integers(0, cols, nnz)
    if not duplicates:
        flat = np.unique(r * cols + c)
        r, c = flat // cols, flat % cols
        RNG.shuffle(perm := np.arange(len(r)))
        r, c = r[perm], c[perm]
    v = RNG.standard_normal(len(r)).astype(dtype)
    dense = np.zeros((rows, cols), dtype)
    np.add.at(dense, (r, c), v)
    return ember.sparse_coo_tensor(np.stack([r, c]), v, (rows, cols)), dense


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("duplicates", [False, True])
def test_sparse_times_dense_matches_numpy(layout, duplicates):
    a, dense = random_sparse(duplicates=duplicates)
    if layout == "csr":
        a = a.to_sparse_csr()
    b = RNG.standard_normal((4, 3))
    for result in (ember.sparse.mm(a, ember.tensor(b)), ember.mm(a, ember.tensor(b)), a @ ember.tensor(b),
                   ember.matmul(a, ember.tensor(b)), a.mm(ember.tensor(b))):
        assert result.layout is ember.strided
        np.testing.assert_allclose(result.numpy(), dense @ b, rtol=1e-12)
    left = RNG.standard_normal((2, 5))
    np.testing.assert_allclose((ember.tensor(left) @ a).numpy(), left @ dense, rtol=1e-12)
    np.testing.assert_allclose(ember.mm(ember.tensor(left), a).numpy(), left @ dense, rtol=1e-12)
    v = RNG.standard_normal(4)
    np.testing.assert_allclose((a @ ember.tensor(v)).numpy(), dense @ v, rtol=1e-12)


def test_addmm_and_sparse_times_sparse():
    a, dense = random_sparse()
    b = RNG.standard_normal((4, 3))
    c = RNG.standard_normal((5, 3))
    out = ember.addmm(ember.tensor(c), a, ember.tensor(b), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(out.numpy(), 0.5 * c + 2.0 * dense @ b, rtol=1e-12)
    np.testing.assert_allclose(ember.sparse.addmm(ember.tensor(c), a, ember.tensor(b)).numpy(), c + dense @ b,
                               rtol=1e-12)
    s, sd = random_sparse(4, 6, 5)
    product = ember.sparse.mm(a, s)
    assert product.layout is ember.sparse_coo
    np.testing.assert_allclose(product.to_dense().numpy(), dense @ sd, rtol=1e-12)


def test_product_gradients_reach_values_and_dense_side():
    a, _ = random_sparse(duplicates=True)
    values = a._values().detach().requires_grad_(True)
    b = ember.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    rebuilt = a._with_values(values)
    assert ember.autograd.gradcheck(lambda v, d: ember.sparse.mm(a._with_values(v), d), (values, b))
    dense_grad = np.ones((5, 3)) @ b.detach().numpy().T
    for leaf in (a.detach().requires_grad_(True), a.coalesce().detach().requires_grad_(True)):
        ember.sparse.mm(leaf, b).sum().backward()
        grad = leaf.grad
        assert grad.layout is ember.sparse_coo and grad.is_coalesced()
        if leaf.is_coalesced():
            assert grad._indices() is leaf._indices()  # the leaf's own structure, shared
        idx = grad._indices().numpy()
        np.testing.assert_allclose(grad._values().numpy(), dense_grad[idx[0], idx[1]], rtol=1e-12)
    assert rebuilt.requires_grad and rebuilt.is_leaf


def test_dense_times_sparse_and_csr_gradients():
    a, dense = random_sparse()
    csr = a.to_sparse_csr().detach().requires_grad_(True)
    left = ember.tensor(RNG.standard_normal((2, 5)), requires_grad=True)
    (left @ csr).pow(2).sum().backward()
    g = 2 * (left.detach().numpy() @ dense)
    np.testing.assert_allclose(left.grad.numpy(), g @ dense.T, rtol=1e-10)
    assert csr.grad.layout is ember.sparse_csr
    rows = np.repeat(np.arange(5), np.diff(csr.crow_indices().numpy()))
    expected = (left.detach().numpy().T @ g)[rows, csr.col_indices().numpy()]
    np.testing.assert_allclose(csr.grad.values().numpy(), expected, rtol=1e-10)


def test_sum_reductions():
    a, dense = random_sparse(duplicates=True)
    assert ember.sparse.sum(a).item() == pytest.approx(dense.sum())
    assert ember.sum(a).item() == pytest.approx(dense.sum())
    rows = ember.sparse.sum(a, 1)
    assert rows.layout is ember.sparse_coo and rows.is_coalesced()
    np.testing.assert_allclose(rows.to_dense().numpy(), dense.sum(1), rtol=1e-12)
    both = ember.sparse.sum(a, (0, 1))
    assert both.layout is ember.strided and both.item() == pytest.approx(dense.sum())
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sparse.sum(a, 5)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_stored_entries(dim, log):
    a, dense = random_sparse(duplicates=True)
    a = a.coalesce()
    out = (ember.sparse.log_softmax if log else ember.sparse.softmax)(a, dim)
    masked = np.where(a.to_dense().numpy() != 0, dense, -np.inf)
    shifted = masked - masked.max(axis=dim, keepdims=True, initial=-1e300)
    e = np.exp(shifted)
    ref = e / np.where(e.sum(dim, keepdims=True) == 0, 1, e.sum(dim, keepdims=True))
    idx = out._indices().numpy()
    got = out._values().numpy()
    want = np.log(ref[idx[0], idx[1]]) if log else ref[idx[0], idx[1]]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    values = a._values().detach().requires_grad_(True)
    assert ember.autograd.gradcheck(lambda v: ember.sparse.softmax(a._with_values(v), dim)._values(), (values,))


def test_elementwise_ops_keep_the_structure():
    a, dense = random_sparse(duplicates=True)
    b, bdense = random_sparse()
    d = RNG.standard_normal((5, 4))
    cases = {
        "2 * a": (2 * a, 2 * dense), "a / 4": (a / 4, dense / 4), "-a": (-a, -dense), "abs": (abs(a), abs(dense)),
        "sin": (ember.sin(a), np.sin(dense)), "tanh": (a.tanh(), np.tanh(dense)), "a ** 2": (a ** 2, dense ** 2),
        "a + b": (a + b, dense + bdense), "a - b": (a - b, dense - bdense), "a * b": (a * b, dense * bdense),
        "a * d": (a * ember.tensor(d), dense * d), "d * a": (ember.tensor(d) * a, d * dense),
        "relu": (ember.relu(a), np.maximum(dense, 0)), "add": (ember.add(a, b, alpha=2), dense + 2 * bdense),
    }
    for name, (got, want) in cases.items():
        assert got.layout is ember.sparse_coo, name
        np.testing.assert_allclose(got.to_dense().numpy(), want, rtol=1e-12, err_msg=name)
    np.testing.assert_allclose((ember.tensor(d) + a).numpy(), d + dense, rtol=1e-12)
    np.testing.assert_allclose((ember.tensor(d) - a).numpy(), d - dense, rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        a + ember.tensor(d)
    with pytest.raises(RuntimeError, match="expected sizes of 'self' and 'other' to match"):
        a + ember.sparse_coo_tensor([[0], [0]], [1.0], (3, 3), dtype=ember.float64)
    csr = a.to_sparse_csr()
    assert (csr * 3).layout is ember.sparse_csr and (csr + csr).layout is ember.sparse_csr
    np.testing.assert_allclose((csr + csr).to_dense().numpy(), 2 * dense, rtol=1e-12)


def test_inplace_forms_and_zero():
    a, dense = random_sparse()
    a.mul_(3)
    np.testing.assert_allclose(a.to_dense().numpy(), 3 * dense, rtol=1e-12)
    a.zero_()
    assert a._nnz() == 0 and not a.to_dense().numpy().any()
    leaf, _ = random_sparse()
    leaf.requires_grad_(True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.mul_(2)


@pytest.mark.parametrize("bad, error, message", [
    (lambda a: ember.sparse.mm(a, ember.ones(3, 2, dtype=ember.float64)), RuntimeError,
     r"shapes \(5, 4\) and \(3, 2\)"),
    (lambda a: ember.sparse.mm(a, ember.ones(4, 2, dtype=ember.float32)), TypeError, "float64.*float32"),
    (lambda a: ember.sparse.mm(a, ember.ones(4, 2, 2, dtype=ember.float64)), RuntimeError, "matrices expected"),
    (lambda a: ember.sparse.softmax(a.long(), 1), NotImplementedError, "softmax"),
])
def test_product_and_reduction_errors(bad, error, message):
    a, _ = random_sparse()
    with pytest.raises(error, match=message):
        bad(a)


def test_embedding_sized_gcn_layer_trains():
    """A two-layer GCN step on a random graph: sparse adjacency @ dense features, gradients to the weights."""
    n, f, edges = 50, 8, 200
    r, c = RNG.integers(0, n, edges), RNG.integers(0, n, edges)
    adj = ember.sparse_coo_tensor(np.stack([r, c]), np.ones(edges, np.float32), (n, n)).coalesce()
    x = ember.randn(n, f)
    layer = ember.nn.Linear(f, 3)
    optimizer = ember.optim.SGD(layer.parameters(), lr=0.1)
    first = None
    for _ in range(5):
        optimizer.zero_grad()
        loss = ember.sparse.mm(adj, layer(x)).pow(2).mean()
        loss.backward()
        optimizer.step()
        first = first if first is not None else loss.item()
    assert loss.item() < first
