"""The eigendecomposition of general square matrices: ``linalg_eig`` (a primitive: LAPACK's geev) and eigvals.

The eigenvalues of a real matrix are complex in general, so both answer in the input's complex dtype (complex64
for float32), as PyTorch's. Each eigenvector has norm 1 and is defined only up to a phase e^{i phi}: the
derivative (PyTorch's) holds for losses that do not depend on it, and refuses, as PyTorch's does, a gradient
that shows the loss does.
"""
from __future__ import annotations

import numpy as np

from ...schema import Gauge, Sample, defop
from ..namespace import F
from .decompositions import well_conditioned
from .matrices import (check_phase_invariance, diag_embed, diag_of, float_dtype, floating_outputs, matrix_shape, mH,
                       real_gradient)


def _eig_meta(A):
    s = matrix_shape("linalg_eig", A, square=True)
    return s[:-1], s


def _eig_derivative(grads, A, results):
    """gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H with E[i, j] = L[j] - L[i], where
    the term in Re(diag) keeps the eigenvectors at norm 1 (PyTorch's linalg_eig_backward)."""
    grad_values, grad_vectors = grads
    values, vectors = results
    adjoint = mH(vectors)
    if grad_vectors is None:
        if grad_values is None:
            return None
        return real_gradient(F.linalg_solve(adjoint, F.mul(F.unsqueeze(grad_values, -1), adjoint)), A)
    product = F.matmul(adjoint, grad_vectors)
    diagonal = diag_of(product)
    check_phase_invariance("linalg_eig_backward", F.imag(diagonal))
    product = F.sub(product, F.matmul(adjoint, F.mul(vectors, F.unsqueeze(F.real(diagonal), -2))))
    conjugates = F.conj(values)
    ones = F.eye(values.shape[-1], dtype=values.dtype.to_real(), device=values.device)  # E's diagonal: any non-zero
    gaps = F.add(F.sub(F.unsqueeze(conjugates, -2), F.unsqueeze(conjugates, -1)), ones)
    inner = F.div(product, gaps)
    if grad_values is not None:
        inner = F.add(F.sub(inner, diag_embed(diag_of(inner))), diag_embed(grad_values))
    return real_gradient(F.linalg_solve(adjoint, F.matmul(inner, adjoint)), A)


def _eig_tangent(tangents, A, result):
    """Forward mode (PyTorch's linalg_eig_jvp): with dP = V^-1 dA V, dL = diag(dP) and dV = dX - V Re(diag(V^H dX)),
    dX = V (offdiag(dP) / E), the last term keeping the eigenvectors at norm 1."""
    values, vectors = result
    if tangents[0] is None:
        return None, None
    change = F.linalg_solve(vectors, F.matmul(F.to_dtype(tangents[0], vectors.dtype), vectors))
    d_values = diag_of(change)
    ones = F.eye(values.shape[-1], dtype=values.dtype.to_real(), device=values.device)
    gaps = F.add(F.sub(F.unsqueeze(values, -2), F.unsqueeze(values, -1)), ones)
    moved = F.matmul(vectors, F.div(F.sub(change, diag_embed(d_values)), gaps))
    norms = F.real(diag_of(F.matmul(mH(vectors), moved)))
    return d_values, F.sub(moved, F.mul(vectors, F.unsqueeze(norms, -2)))


def _eig_reference(A):
    values, vectors = np.linalg.eig(A)
    wanted = np.result_type(A.dtype, np.complex64)
    return values.astype(wanted), vectors.astype(wanted)


def _eig_samples(make, dtype):
    # distinct eigenvalues (a diagonally dominant matrix spreads them), so that each vector is defined up to phase
    yield Sample((well_conditioned(make, (3, 3)),), note="real input: complex-conjugate pairs possible")
    yield Sample((make((2, 4, 4)),), note="batched")
    yield Sample((make((1, 1)),), note="1 x 1")


defop("linalg_eig(Tensor A)", "linalg", batch="trailing", torch_keywords={"input": "A"},
      promotion=floating_outputs("c", "c"), dtypes="float+complex", meta=_eig_meta,
      outputs=("eigenvalues", "eigenvectors"), derivative=_eig_derivative, jvp=_eig_tangent, reference=_eig_reference,
      samples=_eig_samples, method=False, optional_kernel=True,
      gauge=Gauge("eigenvalues", (("eigenvectors", -1),)),
      doc="eigenvalues and unit-norm eigenvectors (columns) of general square matrices, complex even for real "
          "input, in LAPACK's geev order; derivatives hold for losses that ignore each eigenvector's phase")


def _to_complex(rt, op, args):
    """Promotion rule: float32/float64 or complex in, the complex dtype out."""
    dt = float_dtype(op.name, rt)
    return dt, dt and dt.to_complex()


defop("linalg_eigvals(Tensor A)", "linalg", kind="composite", torch_keywords={"input": "A"},
      promotion=_to_complex, dtypes="float+complex", meta=lambda A: _eig_meta(A)[0],
      composite=lambda A: F.linalg_eig(A)[0], reference=lambda A: _eig_reference(A)[0],
      samples=lambda make, dtype: (Sample((well_conditioned(make, (3, 3)),)), Sample((make((2, 4, 4)),))),
      method=False, doc="the eigenvalues of general square matrices (complex), as linalg_eig's")
