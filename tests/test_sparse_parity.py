"""ember.sparse against PyTorch: values and gradients of the same computations, the layout of gradients,
the exception class of bad input, and ``torch.save`` files holding sparse tensors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*[Ss]parse.*")

INDICES = np.array([[0, 1, 1, 3, 2, 0], [2, 0, 2, 1, 1, 2]])  # (0, 2) twice: uncoalesced
VALUES = np.array([3.0, 4.0, 5.0, -1.0, 0.5, 2.0])
DENSE = np.random.default_rng(1).standard_normal((3, 5))


def pair(layout="coo", requires_grad=True):
    t = torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES), (4, 3))
    e = ember.sparse_coo_tensor(INDICES, VALUES, (4, 3))
    if layout == "csr":
        t, e = t.coalesce().to_sparse_csr(), e.to_sparse_csr()
    return t.detach().requires_grad_(requires_grad), e.detach().requires_grad_(requires_grad)


def close(e, t, **kw):
    e = e.to_dense() if getattr(e, "layout", None) is not ember.strided else e
    t = t.to_dense() if t.layout is not torch.strided else t
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12, **kw)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_mm_values_and_gradients(layout):
    t, e = pair(layout)
    td, ed = torch.tensor(DENSE, requires_grad=True), ember.tensor(DENSE, requires_grad=True)
    ty, ey = torch.sparse.mm(t, td), ember.sparse.mm(e, ed)
    close(ey, ty)
    weights = np.arange(20.0).reshape(4, 5)
    (ty * torch.tensor(weights)).sum().backward()
    (ey * ember.tensor(weights)).sum().backward()
    close(ed.grad, td.grad)
    assert (e.grad.layout is ember.sparse_coo) == (t.grad.layout is torch.sparse_coo)
    assert (e.grad.layout is ember.sparse_csr) == (t.grad.layout is torch.sparse_csr)
    close(e.grad, t.grad)


def test_mm_matmul_addmm_and_dense_on_the_left():
    t, e = pair(requires_grad=False)
    td, ed = torch.tensor(DENSE), ember.tensor(DENSE)
    close(ember.mm(e, ed), torch.mm(t, td))
    close(e @ ed, t @ td)
    close(ember.matmul(e, ember.tensor(DENSE[:, 0])), torch.matmul(t, torch.tensor(DENSE[:, 0])))
    close(ember.addmm(ember.ones(4, 5, dtype=ember.float64), e, ed, beta=2, alpha=0.5),
          torch.addmm(torch.ones(4, 5, dtype=torch.float64), t, td, beta=2, alpha=0.5))
    left = np.arange(8.0).reshape(2, 4)
    close(ember.tensor(left) @ e, torch.tensor(left) @ t)
    close(ember.sparse.mm(e, e.t()), torch.sparse.mm(t, t.t()))


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_sum_values_and_gradients(dim):
    t, e = pair()
    ts = torch.sparse.sum(t) if dim is None else torch.sparse.sum(t, dim)
    es = ember.sparse.sum(e) if dim is None else ember.sparse.sum(e, dim)
    assert (es.layout is ember.strided) == (ts.layout is torch.strided)
    close(es, ts)


@pytest.mark.parametrize("function", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_values_and_gradients(function, dim):
    t, e = pair()
    ty, ey = getattr(torch.sparse, function)(t, dim), getattr(ember.sparse, function)(e, dim)
    close(ey, ty)
    weights = np.arange(12.0).reshape(4, 3)
    torch.sparse.sum(ty * torch.tensor(weights)).backward()
    ember.sparse.sum(ey * ember.tensor(weights)).backward()
    close(e.grad, t.grad)


@pytest.mark.parametrize("name", ["neg", "abs", "sin", "tanh", "sqrt", "relu", "square", "expm1", "log1p", "floor"])
def test_zero_preserving_functions(name):
    t, e = pair(requires_grad=False)
    if name in ("sqrt", "log1p"):  # defined at the stored values once they are not negative
        t, e = torch.abs(t), abs(e)
    close(getattr(ember, name)(e), getattr(torch, name)(t))


def test_binary_elementwise():
    t, e = pair(requires_grad=False)
    d = np.random.default_rng(2).standard_normal((4, 3))
    close(e * 2.5, t * 2.5)
    close(e / 4, t / 4)
    close(e + e * 3, t + t * 3)
    close(e - e.t().t(), t - t.t().t())
    close(e * e, t * t)
    close(e * ember.tensor(d), t * torch.tensor(d))
    close(ember.tensor(d) + e, torch.tensor(d) + t)
    close(e ** 2, t ** 2)
    for ember_error, torch_error in ((lambda: e + ember.tensor(d), lambda: t + torch.tensor(d)),):
        with pytest.raises(RuntimeError):
            torch_error()
        with pytest.raises(RuntimeError):
            ember_error()


@pytest.mark.parametrize("case", [
    lambda lib: lib.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 2), check_invariants=True),
    lambda lib: lib.sparse_coo_tensor([[0, -1], [0, 0]], [3.0, 4.0], (2, 2), check_invariants=True),
    lambda lib: lib.sparse_coo_tensor([0, 1], [3.0, 4.0], (2, 3)),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0, 3.0], (2, 3)),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2,)),
    lambda lib: lib.sparse_csr_tensor([0, 2, 1], [2, 0], [3.0, 4.0], (2, 3), check_invariants=True),
    lambda lib: lib.sparse_csr_tensor([0, 1, 2], [2, 5], [3.0, 4.0], (2, 3), check_invariants=True),
    lambda lib: lib.sparse.mm(lib.sparse_coo_tensor([[0], [1]], [1.0], (2, 3)), lib.ones(2, 2)),
    lambda lib: lib.sparse.mm(lib.sparse_coo_tensor([[0], [1]], [1.0], (2, 3)), lib.ones(3, 2, dtype=lib.float64)),
    lambda lib: lib.sparse.sum(lib.sparse_coo_tensor([[0], [1]], [1.0], (2, 3)), 5),
    lambda lib: lib.sparse.softmax(lib.sparse_coo_tensor([[0], [1]], [1], (2, 3)), 1),
    lambda lib: lib.sparse_coo_tensor([[0], [1]], [1.0], (2, 3)) + lib.ones(2, 3),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 3)).indices(),
    lambda lib: lib.ones(2, 3).indices(),
])
def test_bad_input_raises_what_pytorch_raises(case):
    with pytest.raises(Exception) as theirs:
        case(torch)
    with pytest.raises(type(theirs.value)):
        case(ember)


def test_torch_save_files_with_sparse_tensors_load(tmp_path):
    t = torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES), (4, 3))
    path = tmp_path / "sparse.pt"
    torch.save({"coo": t, "coalesced": t.coalesce(), "csr": t.coalesce().to_sparse_csr()}, path)
    loaded = ember.load(path)
    assert loaded["coo"].layout is ember.sparse_coo and loaded["csr"].layout is ember.sparse_csr
    assert loaded["coalesced"].is_coalesced()
    for key in loaded:
        close(loaded[key], t)


def test_layout_reprs_and_legacy_names_match():
    t, e = pair(requires_grad=False)
    assert repr(e.layout) == repr(t.layout).replace("torch", "ember")
    assert repr(e.to_sparse_csr().layout) == repr(t.coalesce().to_sparse_csr().layout).replace("torch", "ember")
    legacy = ember.sparse.FloatTensor(ember.tensor(INDICES), ember.tensor(VALUES), (4, 3))
    close(legacy.double(), torch.sparse.FloatTensor(torch.tensor(INDICES), torch.tensor(VALUES), (4, 3)).double())
