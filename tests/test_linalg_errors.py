"""ember.linalg's refusals and failure reports: PyTorch's wording, typed errors, the batch element named, the
``_ex`` functions' info instead of an error, and the explicit CPU fallback on a backend without the kernels."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.linalg
from ember.dispatch.schema.errors import BackendError, DtypeError, LinAlgError, ShapeError


def _singular_batch():
    good, bad = np.eye(3), np.diag([1.0, 0.0, 0.0])
    return ember.tensor(np.stack([good, bad]))


def test_linalg_error_is_torch_linalg_error_shaped():
    assert ember.linalg.LinAlgError is LinAlgError
    assert issubclass(LinAlgError, RuntimeError)


def test_inv_of_a_singular_matrix_names_the_pivot():
    with pytest.raises(LinAlgError, match=r"linalg\.inv: The diagonal element 2 is zero, the inversion could not be "
                                          r"completed because the input matrix is singular\."):
        ember.linalg.inv(ember.tensor(np.diag([1.0, 0.0, 0.0])))


def test_batched_failures_name_the_batch_element():
    with pytest.raises(LinAlgError, match=r"linalg\.inv: \(Batch element 1\): The diagonal element 2 is zero"):
        ember.linalg.inv(_singular_batch())
    with pytest.raises(LinAlgError, match=r"linalg\.solve: \(Batch element 1\): The solver failed"):
        ember.linalg.solve(_singular_batch(), ember.ones(2, 3, 1, dtype=ember.float64))
    not_pd = ember.tensor(np.stack([np.eye(2), -np.eye(2)]))
    with pytest.raises(LinAlgError, match=r"linalg\.cholesky: \(Batch element 1\): The factorization could not be "
                                          r"completed because the input is not positive-definite \(the leading minor "
                                          r"of order 1 is not positive-definite\)\."):
        ember.linalg.cholesky(not_pd)


def test_ex_variants_report_info_instead():
    inverse, info = ember.linalg.inv_ex(_singular_batch())
    assert info.tolist() == [0, 2] and info.dtype is ember.int32
    np.testing.assert_allclose(inverse[0].numpy(), np.eye(3))
    assert not np.isfinite(inverse[1].numpy()).all()
    factor, info = ember.linalg.cholesky_ex(ember.tensor(np.diag([1.0, 2.0, -1.0])))
    assert info.item() == 3
    _, _, info = ember.linalg.lu_factor_ex(_singular_batch())
    assert info.tolist() == [0, 2]
    _, info = ember.linalg.solve_ex(_singular_batch(), ember.ones(2, 3, dtype=ember.float64))
    assert info.tolist() == [0, 2]
    with pytest.raises(LinAlgError, match="Batch element 1"):
        ember.linalg.inv_ex(_singular_batch(), check_errors=True)
    with pytest.raises(LinAlgError, match="lu_factor_ex"):
        ember.linalg.lu_factor_ex(_singular_batch(), check_errors=True)


def test_lu_factor_refuses_a_zero_pivot_like_pytorch():
    with pytest.raises(LinAlgError, match=r"U\[2,2\] is zero and using it on lu_solve would result in a division"):
        ember.linalg.lu_factor(ember.tensor(np.diag([1.0, 0.0, 0.0])))


def test_singular_triangular_solve_gives_inf_not_an_error():
    """Back substitution through a zero pivot: 1/0 = inf, then inf times the coupling, as PyTorch's LAPACK does."""
    a = ember.tensor(np.array([[2.0, 1.0], [0.0, 0.0]]))
    out = ember.linalg.solve_triangular(a, ember.ones(2, 1, dtype=ember.float64), upper=True)
    assert out.flatten().tolist() == [-np.inf, np.inf]


@pytest.mark.parametrize("dtype,words", [(ember.int64, "Expected a floating point tensor as input. Got int64"),
                                         (ember.float16, "Low precision dtypes not supported. Got float16")])
def test_dtypes_refused_naming_the_op(dtype, words):
    a = ember.ones(3, 3, dtype=dtype)
    for fn in (ember.linalg.det, ember.linalg.qr, ember.linalg.svd, ember.linalg.cholesky, ember.linalg.inv):
        with pytest.raises(DtypeError, match=words):
            fn(a)


@pytest.mark.parametrize("call,words", [
    (lambda: ember.linalg.det(ember.ones(2, 3)), r"linalg\.det: A must be batches of square matrices, but they are "
                                                 r"2 by 3 matrices"),
    (lambda: ember.linalg.inv(ember.ones(3)), "at least 2 dimensions"),
    (lambda: ember.linalg.solve(ember.eye(3), ember.ones(4, 2)), "Incompatible shapes of A and B"),
    (lambda: ember.linalg.cross(ember.ones(4, 2), ember.ones(4, 2)), "dimension -1 must have length 3"),
    (lambda: ember.linalg.multi_dot([ember.ones(2, 3)]), "at least 2 tensors"),
    (lambda: ember.linalg.tensorinv(ember.ones(2, 3, 4), 1), "prod"),
    (lambda: ember.linalg.solve_triangular(ember.eye(3), ember.ones(2, 2), upper=True), "Incompatible shapes"),
])
def test_shape_errors(call, words):
    with pytest.raises(ShapeError, match=words):
        call()


@pytest.mark.parametrize("call,words", [
    (lambda: ember.linalg.qr(ember.eye(2), mode="full"), "unrecognized mode 'full'"),
    (lambda: ember.linalg.eigh(ember.eye(2), UPLO="X"), "UPLO"),
    (lambda: ember.linalg.matrix_norm(ember.eye(2), ord=3), "Order 3 not supported"),
    (lambda: ember.linalg.lstsq(ember.eye(2), ember.eye(2), driver="magic"), "driver"),
    (lambda: ember.renorm(ember.eye(2), -1, 0, 1.0), "non-positive norm"),
])
def test_bad_arguments(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_backend_without_kernels_refuses_unless_the_fallback_is_on():
    """opencl has no LAPACK kernels: the op says so and how to fall back; with the fallback on it runs on the CPU."""
    from ember.dispatch.execution.fallback import get_fallback, set_fallback
    if "opencl" not in ember.backends.available():
        pytest.skip("no OpenCL platform here")
    a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    previous = get_fallback()
    set_fallback(None)
    try:
        with pytest.raises(BackendError, match="linalg_lu_factor_ex: the opencl backend has no kernel.*EMBER_FALLBACK"):
            ember.linalg.det(ember.tensor(a, device="opencl"))
        set_fallback("cpu")
        with pytest.warns(RuntimeWarning, match="running it on cpu"):
            out = ember.linalg.det(ember.tensor(a, device="opencl"))
        assert out.device.type == "opencl"
        assert out.item() == pytest.approx(11.0)
    finally:
        set_fallback(previous)


def test_out_arguments_of_the_python_level_functions():
    a = ember.tensor(np.array([[4.0, 1.0], [1.0, 3.0]]))
    factor, info = ember.empty(2, 2, dtype=ember.float64), ember.empty((), dtype=ember.int32)
    result = ember.linalg.cholesky_ex(a, out=(factor, info))
    assert result[0] is factor and info.item() == 0
    np.testing.assert_allclose(factor.numpy(), np.linalg.cholesky(a.numpy()))
    s = ember.empty(2, dtype=ember.float64)
    u, vh = ember.empty(2, 2, dtype=ember.float64), ember.empty(2, 2, dtype=ember.float64)
    ember.linalg.svd(a, out=(u, s, vh))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a.numpy(), compute_uv=False))
