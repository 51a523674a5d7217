"""torch.linalg's functions on complex64/complex128 matrices against PyTorch: values (singular and eigenvectors up
to their phase), output dtypes (real singular values, norms and Hermitian eigenvalues), batches, and errors."""
import math

import numpy as np
import pytest

import ember
from complex_matrices import hermitian_positive as _hermitian_positive, invertible as _invertible
from complex_matrices import random_matrix as _random, triangular as _triangular

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated"),
              pytest.mark.filterwarnings("ignore:torch.qr is deprecated")]

COMPLEX = {ember.complex64: 1e-4, ember.complex128: 1e-10}


def _unphased(vectors: np.ndarray, axis: int = -2) -> np.ndarray:
    """Each vector (a column for axis -2: entries along that axis) turned so its largest entry is real positive."""
    largest = np.take_along_axis(vectors, np.expand_dims(np.abs(vectors).argmax(axis), axis), axis)
    return vectors * (np.abs(largest) / largest)


def _factor(a):
    return torch.linalg.lu_factor(torch.tensor(a))


# name -> (arguments builder (dtype -> tuple of arrays), ember call, torch call, gauge: output index -> vector axis)
CASES = {
    "svd": (lambda d: (_random((2, 4, 3), d, 0),), lambda a: ember.linalg.svd(a, full_matrices=False),
            lambda a: torch.linalg.svd(a, full_matrices=False), {0: -2, 2: -1}),
    "svdvals": (lambda d: (_random((3, 5), d, 1),), ember.linalg.svdvals, torch.linalg.svdvals, {}),
    "svd_legacy": (lambda d: (_random((4, 3), d, 2),), ember.svd, torch.svd, {0: -2, 2: -2}),
    "qr": (lambda d: (_random((2, 4, 3), d, 3),), ember.linalg.qr, torch.linalg.qr, {}),
    "qr_complete_wide": (lambda d: (_random((3, 4), d, 4),), lambda a: ember.linalg.qr(a, mode="complete"),
                         lambda a: torch.linalg.qr(a, mode="complete"), {}),
    "eigh": (lambda d: (_hermitian_positive((2, 3, 3), d, 5),), ember.linalg.eigh, torch.linalg.eigh, {1: -2}),
    "eigh_upper": (lambda d: (_hermitian_positive((3, 3), d, 6),), lambda a: ember.linalg.eigh(a, UPLO="U"),
                   lambda a: torch.linalg.eigh(a, UPLO="U"), {1: -2}),
    "eigvalsh": (lambda d: (_hermitian_positive((2, 4, 4), d, 7),), ember.linalg.eigvalsh, torch.linalg.eigvalsh, {}),
    "cholesky": (lambda d: (_hermitian_positive((2, 3, 3), d, 8),), ember.linalg.cholesky, torch.linalg.cholesky, {}),
    "cholesky_upper": (lambda d: (_hermitian_positive((3, 3), d, 9),), lambda a: ember.linalg.cholesky(a, upper=True),
                       lambda a: torch.linalg.cholesky(a, upper=True), {}),
    "cholesky_ex": (lambda d: (_hermitian_positive((3, 3), d, 10),), ember.linalg.cholesky_ex,
                    torch.linalg.cholesky_ex, {}),
    "cholesky_solve": (lambda d: (_random((3, 2), d, 11), np.linalg.cholesky(_hermitian_positive((3, 3), d, 12))),
                       ember.cholesky_solve, torch.cholesky_solve, {}),
    "cholesky_inverse_upper": (lambda d: (np.conj(np.linalg.cholesky(_hermitian_positive((3, 3), d, 13)).T),),
                               lambda a: ember.cholesky_inverse(a, upper=True),
                               lambda a: torch.cholesky_inverse(a, upper=True), {}),
    "solve": (lambda d: (_invertible((2, 3, 3), d, 14), _random((2, 3, 2), d, 15)), ember.linalg.solve,
              torch.linalg.solve, {}),
    "solve_vector_right": (lambda d: (_invertible((3, 3), d, 16), _random((2, 4, 3), d, 17)),
                           lambda a, b: ember.linalg.solve(a, b, left=False),
                           lambda a, b: torch.linalg.solve(a, b, left=False), {}),
    "solve_ex": (lambda d: (_invertible((3, 3), d, 18), _random((3,), d, 19)), ember.linalg.solve_ex,
                 torch.linalg.solve_ex, {}),
    "inv": (lambda d: (_invertible((2, 4, 4), d, 20),), ember.linalg.inv, torch.linalg.inv, {}),
    "inv_ex": (lambda d: (_invertible((3, 3), d, 21),), ember.linalg.inv_ex, torch.linalg.inv_ex, {}),
    "det": (lambda d: (_random((2, 3, 3), d, 22),), ember.linalg.det, torch.linalg.det, {}),
    "slogdet": (lambda d: (_random((2, 3, 3), d, 23),), ember.linalg.slogdet, torch.linalg.slogdet, {}),
    "logdet": (lambda d: (_random((3, 3), d, 24),), ember.logdet, torch.logdet, {}),
    "lu_factor": (lambda d: (_random((2, 4, 4), d, 25),), ember.linalg.lu_factor, torch.linalg.lu_factor, {}),
    "lu": (lambda d: (_random((2, 4, 3), d, 26),), ember.linalg.lu, torch.linalg.lu, {}),
    "lu_solve_adjoint_right": (lambda d: (_invertible((3, 3), d, 27), _random((2, 3), d, 28)),
                               lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b, left=False,
                                                                  adjoint=True),
                               lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, left=False,
                                                                  adjoint=True), {}),
    "lu_solve_adjoint": (lambda d: (_invertible((3, 3), d, 29), _random((3, 2), d, 30)),
                         lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b, adjoint=True),
                         lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True), {}),
    "solve_triangular": (lambda d: (_triangular((2, 3, 3), d, 31, True), _random((3, 2), d, 32)),
                         lambda a, b: ember.linalg.solve_triangular(a, b, upper=True),
                         lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), {}),
    "solve_triangular_right_unit": (lambda d: (_triangular((3, 3), d, 33, False), _random((2, 3), d, 34)),
                                    lambda a, b: ember.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                               unitriangular=True),
                                    lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                               unitriangular=True), {}),
    "triangular_solve_transpose": (lambda d: (_random((3, 2), d, 35), _triangular((3, 3), d, 36, True)),
                                   lambda b, a: ember.triangular_solve(b, a, transpose=True),
                                   lambda b, a: torch.triangular_solve(b, a, transpose=True), {}),
    "pinv": (lambda d: (_random((2, 4, 3), d, 37),), ember.linalg.pinv, torch.linalg.pinv, {}),
    "pinv_hermitian": (lambda d: (_hermitian_positive((3, 3), d, 38),), lambda a: ember.linalg.pinv(a, hermitian=True),
                       lambda a: torch.linalg.pinv(a, hermitian=True), {}),
    "matrix_rank": (lambda d: (_random((4, 2), d, 39) @ _random((2, 4), d, 40),), ember.linalg.matrix_rank,
                    torch.linalg.matrix_rank, {}),
    "lstsq": (lambda d: (_random((5, 3), d, 41), _random((5, 2), d, 42)),
              lambda a, b: ember.linalg.lstsq(a, b, driver="gelsd"),
              lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), {}),
    "matrix_exp": (lambda d: (_random((2, 3, 3), d, 43),), ember.linalg.matrix_exp, torch.linalg.matrix_exp, {}),
    "matrix_power": (lambda d: (_random((3, 3), d, 44),), lambda a: ember.linalg.matrix_power(a, 3),
                     lambda a: torch.linalg.matrix_power(a, 3), {}),
    "matrix_power_negative": (lambda d: (_invertible((3, 3), d, 45),), lambda a: ember.linalg.matrix_power(a, -2),
                              lambda a: torch.linalg.matrix_power(a, -2), {}),
    "cross": (lambda d: (_random((4, 3), d, 46), _random((4, 3), d, 47)), ember.linalg.cross, torch.linalg.cross, {}),
    "vecdot": (lambda d: (_random((3, 4), d, 48), _random((4,), d, 49)), ember.linalg.vecdot, torch.linalg.vecdot,
               {}),
    "multi_dot": (lambda d: (_random((2, 3), d, 50), _random((3, 4), d, 51), _random((4,), d, 52)),
                  lambda *t: ember.linalg.multi_dot(list(t)), lambda *t: torch.linalg.multi_dot(list(t)), {}),
    "vander": (lambda d: (_random((2, 3), d, 53),), ember.linalg.vander, torch.linalg.vander, {}),
    "tensorinv": (lambda d: (_invertible((6, 6), d, 54).reshape(2, 3, 6),), ember.linalg.tensorinv,
                  torch.linalg.tensorinv, {}),
    "tensorsolve": (lambda d: (_invertible((6, 6), d, 55).reshape(2, 3, 6), _random((2, 3), d, 56)),
                    ember.linalg.tensorsolve, torch.linalg.tensorsolve, {}),
    "householder_product": (lambda d: (_random((4, 3), d, 57), _random((2,), d, 58)),
                            ember.linalg.householder_product, torch.linalg.householder_product, {}),
    "orgqr": (lambda d: (_random((4, 3), d, 70), _random((3,), d, 71)), ember.orgqr, torch.orgqr, {}),
    "geqrf": (lambda d: (_random((2, 3, 4), d, 72),), ember.geqrf, torch.geqrf, {}),
    "ormqr_adjoint_right": (lambda d: (*[x.numpy() for x in torch.geqrf(torch.tensor(_random((3, 3), d, 73)))],
                                       _random((2, 3), d, 74)),
                            lambda a, tau, c: ember.ormqr(a, tau, c, False, True),
                            lambda a, tau, c: torch.ormqr(a, tau, c, False, True), {}),
    "qr_legacy": (lambda d: (_random((4, 3), d, 75),), ember.qr, torch.qr, {}),
    "ldl_factor_hermitian": (lambda d: (_hermitian_positive((3, 3), d, 59) - 4 * np.eye(3),),
                             lambda a: ember.linalg.ldl_factor(a, hermitian=True),
                             lambda a: torch.linalg.ldl_factor(a, hermitian=True), {}),
    "ldl_solve": (lambda d: (_random((4, 4), d, 60), _random((4, 2), d, 61)),
                  lambda a, b: ember.linalg.ldl_solve(*ember.linalg.ldl_factor(a + a.mT), b),
                  lambda a, b: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a + a.mT), b), {}),
    "vector_norm": (lambda d: (_random((2, 3, 4), d, 62),), ember.linalg.vector_norm, torch.linalg.vector_norm, {}),
    "vector_norm_ord": (lambda d: (_random((3, 4), d, 63),), lambda a: ember.linalg.vector_norm(a, 3.5, -1),
                        lambda a: torch.linalg.vector_norm(a, 3.5, -1), {}),
    "norm": (lambda d: (_random((3, 4), d, 64),), ember.linalg.norm, torch.linalg.norm, {}),
    "dist": (lambda d: (_random((3, 4), d, 65), _random((4,), d, 66)), ember.dist, torch.dist, {}),
    "cond": (lambda d: (_invertible((2, 3, 3), d, 67),), ember.linalg.cond, torch.linalg.cond, {}),
    "cond_fro": (lambda d: (_invertible((3, 3), d, 68),), lambda a: ember.linalg.cond(a, "fro"),
                 lambda a: torch.linalg.cond(a, "fro"), {}),
}
for _ord in ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2):
    CASES[f"matrix_norm_{_ord}"] = (
        lambda d: (_random((2, 3, 4), d, 69),), lambda a, o=_ord: ember.linalg.matrix_norm(a, o),
        lambda a, o=_ord: torch.linalg.matrix_norm(a, o), {})


def _outputs(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("dtype", list(COMPLEX))
@pytest.mark.parametrize("name", list(CASES))
def test_complex_linalg_matches_torch(name, dtype):
    build, ember_fn, torch_fn, gauge = CASES[name]
    arrays = build(dtype)
    mine = _outputs(ember_fn(*[ember.tensor(a) for a in arrays]))
    theirs = [t.resolve_conj() for t in _outputs(torch_fn(*[torch.tensor(a) for a in arrays]))]
    tol = COMPLEX[dtype]
    assert len(mine) == len(theirs)
    for index, (m, t) in enumerate(zip(mine, theirs)):
        assert m.dtype.name == str(t.dtype).replace("torch.", ""), (name, index)
        assert tuple(m.shape) == tuple(t.shape), (name, index)
        m, t = m.numpy(), t.numpy()
        if index in gauge:
            m, t = _unphased(m, gauge[index]), _unphased(t, gauge[index])
        np.testing.assert_allclose(m, t, rtol=tol * 100, atol=tol * 100, err_msg=f"{name} output {index}")


def test_real_inputs_keep_real_dtypes():
    a = ember.tensor(np.eye(3) * 2.0)
    assert ember.linalg.svdvals(a).dtype == ember.float64
    assert ember.linalg.eigh(a)[0].dtype == ember.float64
    assert ember.linalg.slogdet(a)[1].dtype == ember.float64


@pytest.mark.parametrize("call,words", [
    (lambda z: ember.linalg.inv(z), r"linalg\.inv: The diagonal element 2 is zero, the inversion could not be "
                                    r"completed because the input matrix is singular"),
    (lambda z: ember.linalg.solve(z, z), "linalg.solve: The solver failed because the input matrix is singular"),
    (lambda z: ember.linalg.cholesky(z), "linalg.cholesky: The factorization could not be completed because the "
                                         "input is not positive-definite"),
])
def test_singular_complex_matrices_raise_as_torch(call, words):
    singular = ember.tensor(np.array([[1 + 1j, 2 + 2j], [1 + 1j, 2 + 2j]], np.complex64))
    with pytest.raises(ember.linalg.LinAlgError, match=words):
        call(singular)


def test_non_square_complex_matrix_raises_as_torch():
    words = "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"
    with pytest.raises(ember.dispatch.ShapeError, match=words):
        ember.linalg.inv(ember.tensor(np.ones((2, 3), np.complex64)))


def test_norm_dtype_must_match_the_input_kind_as_in_torch():
    z = ember.tensor(np.ones((3, 2), np.complex64))
    assert ember.linalg.vector_norm(z, dtype=ember.complex128).dtype == ember.float64
    assert ember.linalg.matrix_norm(z, dtype=ember.complex128).dtype == ember.float64
    complex_words = "linalg.vector_norm: dtype should be complex for complex inputs, but got Double"
    with pytest.raises(ember.dispatch.DtypeError, match=complex_words):
        ember.linalg.vector_norm(z, dtype=ember.float64)
    real_words = "linalg.vector_norm: dtype should be real for real inputs, but got ComplexFloat"
    with pytest.raises(ember.dispatch.DtypeError, match=real_words):
        ember.linalg.vector_norm(ember.ones(3), dtype=ember.complex64)
