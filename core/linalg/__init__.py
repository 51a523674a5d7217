"""``ember.linalg``: torch.linalg's functions, with its names, signatures and named-tuple results.

Each is one op of the schema (``linalg_<name>`` in ``ember.dispatch.ops``, declared in ops/linalg/decompositions.py
and the ops/linalg/linalg_*.py modules); the few defined here add what an op cannot say: the ``check_errors``
switch of the ``_ex`` functions and torch.linalg's ``driver=`` keyword. Every function takes complex matrices too,
as torch.linalg's, and ``eig``/``eigvals`` answer in complex even for real input.
"""
from __future__ import annotations

from ..dispatch.schema.errors import ArgumentError, LinAlgError
from ..dispatch.ops import F
from ..dispatch.ops.linalg.matrices import check_info
from ..dispatch.execution.out_argument import write_out

cholesky = F.linalg_cholesky
cond = F.linalg_cond
cross = F.linalg_cross
det = F.linalg_det
eig = F.linalg_eig
eigh = F.linalg_eigh
eigvals = F.linalg_eigvals
eigvalsh = F.linalg_eigvalsh
householder_product = F.linalg_householder_product
inv = F.linalg_inv
ldl_factor = F.linalg_ldl_factor
ldl_solve = F.linalg_ldl_solve
lstsq = F.linalg_lstsq
lu = F.linalg_lu
lu_factor = F.linalg_lu_factor
lu_solve = F.linalg_lu_solve
matmul = F.matmul
matrix_exp = F.linalg_matrix_exp
matrix_norm = F.linalg_matrix_norm
matrix_power = F.linalg_matrix_power
multi_dot = F.linalg_multi_dot
norm = F.linalg_norm
qr = F.linalg_qr
slogdet = F.linalg_slogdet
solve = F.linalg_solve
solve_triangular = F.linalg_solve_triangular
svdvals = F.linalg_svdvals
tensorinv = F.linalg_tensorinv
tensorsolve = F.linalg_tensorsolve
vander = F.linalg_vander
vecdot = F.linalg_vecdot
vector_norm = F.linalg_vector_norm


def pinv(input, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None):
    """The Moore-Penrose pseudo-inverse. ``rcond`` is PyTorch's deprecated name for ``rtol`` (its overload
    ``pinv(input, rcond, hermitian)``)."""
    atol, rtol = _tolerances("pinv", rcond, "rcond", atol, rtol, relative=True)
    return F.linalg_pinv(input, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def matrix_rank(input, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None):
    """The number of singular values (eigenvalues' magnitudes for ``hermitian``) above the tolerance. ``tol`` is
    PyTorch's deprecated name for ``atol`` (its overload ``matrix_rank(input, tol, hermitian)``)."""
    atol, rtol = _tolerances("matrix_rank", tol, "tol", atol, rtol, relative=False)
    return F.linalg_matrix_rank(input, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def _tolerances(name: str, old, old_name: str, atol, rtol, relative: bool):
    """(atol, rtol) from PyTorch's two spellings: the deprecated single tolerance, or atol/rtol."""
    if old is None:
        return atol, rtol
    if atol is not None or rtol is not None:
        raise ArgumentError(f"linalg.{name}: {old_name} cannot be given with atol or rtol")
    return (None, old) if relative else (old, 0.0)


def _finish_ex(name: str, result, failure, check_errors: bool, out):
    """An ``_ex`` function's ending: with ``check_errors``, LinAlgError (``failure(info)`` its message) where
    info is non-zero; then ``result`` written to ``out`` if given."""
    if check_errors:
        check_info(f"linalg_{name}", result.info, failure)
    return write_out(f"linalg.{name}", result, out)


def cholesky_ex(input, *, upper: bool = False, check_errors: bool = False, out=None):
    """(L, info): info > 0 is the order of the first leading minor that is not positive-definite."""
    return _finish_ex("cholesky_ex", F.linalg_cholesky_ex(input, upper=upper), lambda code: (
        f"The factorization could not be completed because the input is not positive-definite (the leading minor "
        f"of order {code} is not positive-definite)."), check_errors, out)


def inv_ex(A, *, check_errors: bool = False, out=None):
    """(inverse, info): info > 0 is the 1-based index of LU's first zero pivot."""
    return _finish_ex("inv_ex", F.linalg_inv_ex(A), lambda code: (
        f"The diagonal element {code} is zero, the inversion could not be completed because the input matrix is "
        f"singular."), check_errors, out)


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False, out=None):
    """(result, info): info > 0 where A is singular."""
    return _finish_ex("solve_ex", F.linalg_solve_ex(A, B, left=left),
                      lambda code: "The solver failed because the input matrix is singular.", check_errors, out)


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None):
    """(LU, pivots, info): info > 0 is the 1-based index of the first zero pivot."""
    return _finish_ex("lu_factor_ex", F.linalg_lu_factor_ex(A, pivot=pivot), lambda code: (
        f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero."), check_errors, out)


def ldl_factor_ex(input, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """(LD, pivots, info): info > 0 is the 1-based position of a zero in the block diagonal D."""
    return _finish_ex("ldl_factor_ex", F.linalg_ldl_factor_ex(input, hermitian=hermitian), lambda code: (
        f"The factorization could not be completed because the block diagonal matrix D has a zero at position "
        f"{code}: the input is singular"), check_errors, out)


def svd(A, full_matrices: bool = True, *, driver: str | None = None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh; ``driver`` picks a cuSOLVER algorithm in PyTorch and is ignored here."""
    _check_driver("svd", driver)
    return write_out("linalg.svd", F.linalg_svd(A, full_matrices), out)


def _check_driver(name: str, driver) -> None:
    if driver not in (None, "gesvd", "gesvdj", "gesvda"):
        raise ArgumentError(f"linalg.{name}: driver must be one of None, 'gesvd', 'gesvdj', 'gesvda', got {driver!r}")


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """The diagonal of the matrices on the last two dims (a view), as ``ember.diagonal`` with these defaults."""
    return F.diagonal(A, offset, dim1, dim2)


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]


from ..tensor.numpy_names import accept_numpy_names_in  # noqa: E402

accept_numpy_names_in(globals())  # NumPy's keyword names, as PyTorch's binding takes them
