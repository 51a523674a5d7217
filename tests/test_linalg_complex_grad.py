"""Gradients of torch.linalg's functions on complex matrices against PyTorch's (the conjugate Wirtinger
convention). Outputs defined up to a phase (singular and eigenvectors) get cotangents of a phase-invariant loss,
sum c_ij |V_ij|^2, so the gradient is defined; the others get random complex (or, for real outputs, real) ones."""
import numpy as np
import pytest

import ember
from complex_matrices import hermitian_positive as _hermitian_positive, invertible as _invertible
from complex_matrices import random_matrix as _random, triangular as _triangular

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")

TOLERANCES = {ember.complex64: 2e-3, ember.complex128: 1e-8}
PHASE = "phase"  # an output's cotangent is that of sum c_ij |x_ij|^2


# name -> (inputs builder, ember call, torch call, {output index: PHASE or "free"}: the outputs differentiated).
# cholesky_solve: Ember gives the factor's other triangle, which the result never reads, no gradient (see
# test_linalg_parity), so PyTorch's side reads only that triangle too.
CASES = {
    "svd": (lambda d: (_random((2, 4, 3), d, 0),), lambda a: ember.linalg.svd(a, full_matrices=False),
            lambda a: torch.linalg.svd(a, full_matrices=False), {0: PHASE, 1: "free", 2: PHASE}),
    "svd_wide_values": (lambda d: (_random((3, 5), d, 1),), ember.linalg.svdvals, torch.linalg.svdvals, {0: "free"}),
    "qr_tall": (lambda d: (_random((2, 4, 3), d, 2),), ember.linalg.qr, torch.linalg.qr, {0: "free", 1: "free"}),
    "qr_wide": (lambda d: (_random((3, 5), d, 3),), ember.linalg.qr, torch.linalg.qr, {0: "free", 1: "free"}),
    "eigh": (lambda d: (_hermitian_positive((2, 3, 3), d, 4),), ember.linalg.eigh, torch.linalg.eigh,
             {0: "free", 1: PHASE}),
    "eigh_vectors_only": (lambda d: (_hermitian_positive((3, 3), d, 5),), ember.linalg.eigh, torch.linalg.eigh,
                          {1: PHASE}),
    "eigvalsh": (lambda d: (_hermitian_positive((3, 3), d, 6),), ember.linalg.eigvalsh, torch.linalg.eigvalsh,
                 {0: "free"}),
    "cholesky": (lambda d: (_hermitian_positive((2, 3, 3), d, 7),), ember.linalg.cholesky, torch.linalg.cholesky,
                 {0: "free"}),
    "cholesky_upper": (lambda d: (_hermitian_positive((3, 3), d, 8),), lambda a: ember.linalg.cholesky(a, upper=True),
                       lambda a: torch.linalg.cholesky(a, upper=True), {0: "free"}),
    "solve": (lambda d: (_invertible((2, 3, 3), d, 9), _random((2, 3, 2), d, 10)), ember.linalg.solve,
              torch.linalg.solve, {0: "free"}),
    "solve_right": (lambda d: (_invertible((3, 3), d, 11), _random((2, 3), d, 12)),
                    lambda a, b: ember.linalg.solve(a, b, left=False),
                    lambda a, b: torch.linalg.solve(a, b, left=False), {0: "free"}),
    "inv": (lambda d: (_invertible((2, 3, 3), d, 13),), ember.linalg.inv, torch.linalg.inv, {0: "free"}),
    "det": (lambda d: (_invertible((2, 3, 3), d, 14),), ember.linalg.det, torch.linalg.det, {0: "free"}),
    "slogdet": (lambda d: (_invertible((3, 3), d, 15),), ember.linalg.slogdet, torch.linalg.slogdet,
                {0: "free", 1: "free"}),
    "lu_factor": (lambda d: (_random((2, 4, 4), d, 16),), ember.linalg.lu_factor, torch.linalg.lu_factor,
                  {0: "free"}),
    "lu_tall": (lambda d: (_random((4, 3), d, 17),), ember.linalg.lu, torch.linalg.lu, {1: "free", 2: "free"}),
    "lu_wide": (lambda d: (_random((3, 4), d, 18),), ember.linalg.lu, torch.linalg.lu, {1: "free", 2: "free"}),
    "lu_solve_adjoint": (lambda d: (_invertible((3, 3), d, 19), _random((3, 2), d, 20)),
                         lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b, adjoint=True),
                         lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True),
                         {0: "free"}),
    "solve_triangular": (lambda d: (_triangular((3, 3), d, 21, True), _random((3, 2), d, 22)),
                         lambda a, b: ember.linalg.solve_triangular(a, b, upper=True),
                         lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), {0: "free"}),
    "solve_triangular_right": (lambda d: (_triangular((3, 3), d, 23, False), _random((2, 3), d, 24)),
                               lambda a, b: ember.linalg.solve_triangular(a, b, upper=False, left=False),
                               lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False),
                               {0: "free"}),
    "triangular_solve": (lambda d: (_random((3, 2), d, 25), _triangular((3, 3), d, 26, True)),
                         lambda b, a: ember.triangular_solve(b, a, transpose=True),
                         lambda b, a: torch.triangular_solve(b, a, transpose=True), {0: "free"}),
    "cholesky_solve": (lambda d: (_random((3, 2), d, 27), np.linalg.cholesky(_hermitian_positive((3, 3), d, 28))),
                       ember.cholesky_solve, lambda b, factor: torch.cholesky_solve(b, factor.tril()), {0: "free"}),
    "pinv": (lambda d: (_random((4, 3), d, 29),), ember.linalg.pinv, torch.linalg.pinv, {0: "free"}),
    "lstsq": (lambda d: (_random((5, 3), d, 30), _random((5, 2), d, 31)), ember.linalg.lstsq, torch.linalg.lstsq,
              {0: "free"}),
    "matrix_exp": (lambda d: (_random((3, 3), d, 32),), ember.linalg.matrix_exp, torch.linalg.matrix_exp,
                   {0: "free"}),
    "matrix_power": (lambda d: (_invertible((3, 3), d, 33),), lambda a: ember.linalg.matrix_power(a, -2),
                     lambda a: torch.linalg.matrix_power(a, -2), {0: "free"}),
    "vector_norm": (lambda d: (_random((3, 4), d, 34),), lambda a: ember.linalg.vector_norm(a, 3, -1),
                    lambda a: torch.linalg.vector_norm(a, 3, -1), {0: "free"}),
    "matrix_norm_fro": (lambda d: (_random((2, 3, 4), d, 35),), ember.linalg.matrix_norm, torch.linalg.matrix_norm,
                        {0: "free"}),
    "matrix_norm_nuc": (lambda d: (_random((3, 4), d, 36),), lambda a: ember.linalg.matrix_norm(a, "nuc"),
                        lambda a: torch.linalg.matrix_norm(a, "nuc"), {0: "free"}),
    "cross": (lambda d: (_random((4, 3), d, 37), _random((4, 3), d, 38)), ember.linalg.cross, torch.linalg.cross,
              {0: "free"}),
    "vecdot": (lambda d: (_random((3, 4), d, 39), _random((3, 4), d, 40)), ember.linalg.vecdot, torch.linalg.vecdot,
               {0: "free"}),
    "householder_product": (lambda d: (_random((4, 3), d, 41), _random((2,), d, 42)),
                            ember.linalg.householder_product, torch.linalg.householder_product, {0: "free"}),
    "ormqr": (lambda d: (_random((4, 3), d, 53), _random((3,), d, 54), _random((4, 2), d, 55)),
              lambda a, tau, c: ember.ormqr(a, tau, c, True, True),
              lambda a, tau, c: torch.ormqr(a, tau, c, True, True), {0: "free"}),
    "matmul_broadcast": (lambda d: (_random((2, 1, 3, 4), d, 43), _random((5, 4, 2), d, 44)), ember.matmul,
                         torch.matmul, {0: "free"}),
    "matmul_vectors": (lambda d: (_random((4,), d, 45), _random((3, 4, 2), d, 46)), ember.matmul, torch.matmul,
                       {0: "free"}),
    "bmm": (lambda d: (_random((2, 3, 4), d, 47), _random((2, 4, 2), d, 48)), ember.bmm, torch.bmm, {0: "free"}),
    "outer": (lambda d: (_random((3,), d, 49), _random((4,), d, 50)), ember.outer, torch.outer, {0: "free"}),
    "einsum": (lambda d: (_random((2, 3, 4), d, 51), _random((4, 5), d, 52)),
               lambda a, b: ember.einsum("bij,jk->bik", a, b), lambda a, b: torch.einsum("bij,jk->bik", a, b),
               {0: "free"}),
}


def _outputs(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


def _cotangent(output: np.ndarray, kind: str, seed: int) -> np.ndarray:
    if kind == PHASE:  # d/d conj(x) of sum c |x|^2, times 2 (PyTorch's convention)
        weights = np.arange(1.0, output.size + 1.0).reshape(output.shape)
        return 2 * weights * output
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(output.shape)
    if np.iscomplexobj(output):
        noise = noise + 1j * rng.standard_normal(output.shape)
    return noise.astype(output.dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCES))
@pytest.mark.parametrize("name", list(CASES))
def test_complex_linalg_gradients_match_torch(name, dtype):
    build, ember_fn, torch_fn, differentiated = CASES[name]
    arrays = build(dtype)
    mine_inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    torch_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    mine, theirs = _outputs(ember_fn(*mine_inputs)), _outputs(torch_fn(*torch_inputs))
    indices = sorted(differentiated)
    mine_grads = ember.autograd.grad(
        [mine[i] for i in indices], mine_inputs,
        grad_outputs=[ember.tensor(_cotangent(mine[i].detach().numpy(), differentiated[i], i)) for i in indices])
    theirs_grads = torch.autograd.grad(
        [theirs[i] for i in indices], torch_inputs,
        grad_outputs=[torch.tensor(_cotangent(theirs[i].detach().resolve_conj().numpy(), differentiated[i], i))
                      for i in indices])
    tol = TOLERANCES[dtype]
    for position, (m, t) in enumerate(zip(mine_grads, theirs_grads)):
        assert m.dtype == dtype
        np.testing.assert_allclose(m.numpy(), t.resolve_conj().numpy(), rtol=tol, atol=tol,
                                   err_msg=f"{name}: gradient of input {position}")


def test_real_input_of_a_complex_result_gets_a_real_gradient():
    a = np.array([[2.0, -1.0], [1.0, 3.0]])
    leaf = ember.tensor(a, requires_grad=True)
    values = ember.linalg.eigvals(leaf)
    (grad,) = ember.autograd.grad([values], [leaf], grad_outputs=[ember.tensor(np.array([1 + 2j, 3 - 1j]))])
    torch_leaf = torch.tensor(a, requires_grad=True)
    torch_values = torch.linalg.eigvals(torch_leaf)
    (expected,) = torch.autograd.grad([torch_values], [torch_leaf],
                                      grad_outputs=[torch.tensor(_matching(values, torch_values, [1 + 2j, 3 - 1j]))])
    assert grad.dtype == ember.float64
    np.testing.assert_allclose(grad.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


def _matching(mine, theirs, cotangent) -> np.ndarray:
    """``cotangent`` (given for ``mine``'s order) reordered for ``theirs``: eigenvalues matched by value."""
    mine, theirs = mine.detach().numpy(), theirs.detach().numpy()
    return np.array([cotangent[int(np.abs(mine - value).argmin())] for value in theirs])


@pytest.mark.parametrize("decompose,vectors,words", [
    (lambda a: ember.linalg.svd(a, full_matrices=False), 0,
     "svd_backward: The singular vectors in the complex case are specified up to multiplication by e\\^\\{i phi\\}. "
     "The specified loss function depends on this phase term, making it ill-defined."),
    (ember.linalg.eigh, 1,
     "linalg_eigh_backward: The eigenvectors in the complex case are specified up to multiplication by "
     "e\\^\\{i phi\\}. The specified loss function depends on this quantity, so it is ill-defined."),
])
def test_phase_dependent_losses_are_refused_as_in_torch(decompose, vectors, words):
    leaf = ember.tensor(_hermitian_positive((3, 3), ember.complex128, 43), requires_grad=True)
    output = decompose(leaf)[vectors]
    phase_direction = ember.tensor(1j * output.detach().numpy())  # the cotangent of Im(sum conj(x) x0), x0 = x
    with pytest.raises(RuntimeError, match=words):
        ember.autograd.grad([output], [leaf], grad_outputs=[phase_direction])
