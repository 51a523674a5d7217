"""linalg.eig and linalg.eigvals against PyTorch: complex results for real and complex input, values up to each
eigenvector's phase, gradients of phase-invariant losses, and PyTorch's errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = {ember.float32: (torch.float32, 1e-4), ember.float64: (torch.float64, 1e-10),
          ember.complex64: (torch.complex64, 1e-4), ember.complex128: (torch.complex128, 1e-10)}


def _matrix(shape, dtype, seed=0):
    """A random matrix whose eigenvalues are distinct (so each eigenvector is defined up to its phase)."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    if dtype.is_complex:
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(np.dtype(dtype.name))


def _by_value(values: np.ndarray) -> np.ndarray:
    """The order that sorts eigenvalues by real, then imaginary part (LAPACK builds may order them differently)."""
    return np.lexsort((np.round(values.imag, 6), np.round(values.real, 6)), axis=-1)


def _sorted(values, vectors=None):
    order = _by_value(values)
    values = np.take_along_axis(values, order, -1)
    if vectors is None:
        return values
    return values, np.take_along_axis(vectors, order[..., None, :], -1)


def _unphased(vectors: np.ndarray) -> np.ndarray:
    """Each column turned so that its largest entry is real and positive: the phase gauge removed."""
    largest = np.take_along_axis(vectors, np.abs(vectors).argmax(-2)[..., None, :], -2)
    return vectors * (np.abs(largest) / largest)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1)])
def test_eig_values_and_vectors_match_torch(dtype, shape):
    a = _matrix(shape, dtype)
    torch_dtype, tol = DTYPES[dtype]
    values, vectors = ember.linalg.eig(ember.tensor(a))
    expected_values, expected_vectors = torch.linalg.eig(torch.tensor(a))
    assert values.dtype == vectors.dtype == dtype.to_complex()
    assert str(values.dtype.name) == str(expected_values.dtype).replace("torch.", "")
    mine, theirs = _sorted(values.numpy(), vectors.numpy()), _sorted(expected_values.numpy(), expected_vectors.numpy())
    np.testing.assert_allclose(mine[0], theirs[0], rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(_unphased(mine[1]), _unphased(theirs[1]), rtol=tol * 100, atol=tol * 100)
    np.testing.assert_allclose(np.linalg.norm(vectors.numpy(), axis=-2), 1.0, rtol=tol * 10)
    reconstructed = vectors.numpy() @ (values.numpy()[..., :, None] * np.linalg.inv(vectors.numpy()))
    np.testing.assert_allclose(reconstructed, a, rtol=tol * 100, atol=tol * 100)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_eigvals_match_torch(dtype):
    a = _matrix((2, 5, 5), dtype, seed=1)
    values = ember.linalg.eigvals(ember.tensor(a))
    expected = torch.linalg.eigvals(torch.tensor(a))
    tol = DTYPES[dtype][1]
    assert values.dtype == dtype.to_complex()
    np.testing.assert_allclose(_sorted(values.numpy()), _sorted(expected.numpy()), rtol=tol * 10, atol=tol * 10)


def test_eig_of_a_rotation_is_a_conjugate_pair():
    values = ember.linalg.eigvals(ember.tensor([[0.0, -1.0], [1.0, 0.0]]))
    np.testing.assert_allclose(np.sort_complex(values.numpy()), [-1j, 1j], atol=1e-6)


def _torch_gradient(a, loss_of):
    leaf = torch.tensor(a, requires_grad=True)
    loss_of(*torch.linalg.eig(leaf)).backward()
    return leaf.grad.numpy()


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_eig_gradient_of_eigenvalues_matches_torch(dtype):
    """Loss sum |lambda|^2 + Re(sum lambda^2): its cotangent 2 lambda + 2 conj(lambda) depends only on the values."""
    a = _matrix((2, 4, 4), dtype, seed=2)
    leaf = ember.tensor(a, requires_grad=True)
    values, _ = ember.linalg.eig(leaf)
    w = values.detach().numpy()
    (grad,) = ember.autograd.grad([values], [leaf], grad_outputs=[ember.tensor(2 * w + 2 * np.conj(w))])
    expected = _torch_gradient(a, lambda lam, vec: (lam.abs() ** 2).sum() + (lam ** 2).real.sum())
    assert grad.dtype == dtype
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_eig_gradient_of_phase_invariant_vector_loss_matches_torch(dtype):
    """Loss sum_ij c_ij |V_ij|^2 with weights c fixed by the (sorted) eigenvalue order: no phase changes it."""
    a = _matrix((3, 3), dtype, seed=3)
    weights = np.arange(1.0, 10.0).reshape(3, 3)
    leaf = ember.tensor(a, requires_grad=True)
    values, vectors = ember.linalg.eig(leaf)
    order = _by_value(values.detach().numpy())
    mine_weights = np.empty_like(weights)
    mine_weights[:, order] = weights
    v = vectors.detach().numpy()
    cotangent = ember.tensor(2 * mine_weights * v)
    (grad,) = ember.autograd.grad([vectors], [leaf], grad_outputs=[cotangent])

    def loss(lam, vec):
        theirs = np.empty_like(weights)
        theirs[:, _by_value(lam.detach().numpy())] = weights
        return (torch.tensor(theirs) * vec.abs() ** 2).sum()
    np.testing.assert_allclose(grad.numpy(), _torch_gradient(a, loss), rtol=1e-6, atol=1e-8)


def test_eig_gradient_refuses_a_phase_dependent_loss():
    a = _matrix((3, 3), ember.complex128, seed=4)
    leaf = ember.tensor(a, requires_grad=True)
    _, vectors = ember.linalg.eig(leaf)
    with pytest.raises(RuntimeError, match="linalg_eig_backward: The eigenvectors in the complex case are specified "
                                           "up to multiplication by e\\^\\{i phi\\}"):
        ember.autograd.grad([vectors], [leaf], grad_outputs=[ember.tensor(np.ones((3, 3)) * 1j)])


def test_eig_errors_match_torch():
    words = "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices"
    with pytest.raises(ember.dispatch.ShapeError, match=words):
        ember.linalg.eig(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.eig: input tensor should not contain infs or NaNs"):
        ember.linalg.eig(ember.full((2, 2), float("nan")))
    with pytest.raises(TypeError, match="linalg_eig"):
        ember.linalg.eigvals(ember.ones(2, 2, dtype=ember.int64))


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_eig_forward_mode_matches_torch(dtype):
    a, tangent = _matrix((2, 3, 3), dtype, seed=5), _matrix((2, 3, 3), dtype, seed=6)
    _, (d_values, d_vectors) = ember.func.jvp(ember.linalg.eig, (ember.tensor(a),), (ember.tensor(tangent),))
    (values, vectors), (t_values, t_vectors) = torch.func.jvp(torch.linalg.eig, (torch.tensor(a),),
                                                              (torch.tensor(tangent),))
    mine_values = ember.linalg.eigvals(ember.tensor(a)).numpy()
    order = [[int(np.abs(m - t).argmin()) for t in theirs] for m, theirs in zip(mine_values, values.numpy())]
    d_values, d_vectors = d_values.numpy(), d_vectors.numpy()
    np.testing.assert_allclose(np.take_along_axis(d_values, np.array(order), -1), t_values.numpy(), atol=1e-8)
    ours = np.take_along_axis(d_vectors, np.array(order)[:, None, :], -1)
    ours_v = np.take_along_axis(ember.linalg.eig(ember.tensor(a))[1].numpy(), np.array(order)[:, None, :], -1)
    phase = np.sum(np.conj(ours_v) * vectors.resolve_conj().numpy(), axis=-2, keepdims=True)  # e^{i phi} per vector
    np.testing.assert_allclose(ours * phase, t_vectors.resolve_conj().numpy(), atol=1e-8)
